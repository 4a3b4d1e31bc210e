// Adjudication by keyboard, like the labeling loop: a digit sets the final grade and saves
// (the server then shows the next disputed pair), `n` focuses the note (Enter saves with the
// chosen grade, Esc leaves the note), `s` skips to the next disputed pair, `u` goes back.
// Keys are ignored while typing and when the user switched shortcuts off. Without JavaScript
// the radio buttons, the note and Save do the same.
(() => {
  const root = document.querySelector("[data-adjudicate]");
  const form = root && root.querySelector("form[data-adjudicate-form]");
  if (!form) return;
  const save = form.querySelector("[type=submit]");
  const note = form.querySelector("textarea");
  let sending = false;
  form.addEventListener("submit", () => {
    sending = true;
  });
  window.addEventListener("pageshow", () => {
    sending = false;
  });
  const submit = () => {
    if (!sending && form.querySelector("input[name=grade]:checked")) form.requestSubmit(save);
  };
  const typing = (target) =>
    target instanceof Element &&
    (target.closest("input[type=text], textarea, select, [contenteditable]") !== null ||
      target.isContentEditable);

  if (note) {
    note.addEventListener("keydown", (event) => {
      if (root.dataset.shortcuts !== "on") return;
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        submit();
      } else if (event.key === "Escape") {
        note.blur();
      }
    });
  }

  document.addEventListener("keydown", (event) => {
    if (root.dataset.shortcuts !== "on") return;
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
    if (typing(event.target)) return;
    const key = event.key;
    if (/^[0-9]$/.test(key)) {
      const radio = form.querySelector(`input[name=grade][value="${key}"]`);
      if (radio) {
        event.preventDefault();
        radio.checked = true;
        submit();
      }
    } else if (key === "n" && note) {
      event.preventDefault();
      note.focus();
    } else if (key === "s") {
      const skip = root.querySelector("a[data-skip]");
      if (skip) {
        event.preventDefault();
        window.location.assign(skip.href);
      }
    } else if (key === "u" || key === "Backspace") {
      event.preventDefault();
      const cameFromReview =
        document.referrer.startsWith(window.location.origin) && document.referrer.includes("/review/");
      if (cameFromReview) {
        window.history.back();
      } else {
        const back = root.querySelector("a[data-back]");
        if (back) window.location.assign(back.href);
      }
    }
  });
})();
