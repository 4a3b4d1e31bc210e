// Keyboard-first labeling. A digit grades and moves on (submits the form with that grade's
// button), `u`/Backspace goes back to the last pair, `s` skips, `c` focuses the note for a
// "can't tell" answer. Keys are ignored while typing and when the user switched shortcuts off.
// The time the tab was visible is sent in the hidden active_ms field.
(() => {
  const root = document.querySelector("[data-labeling]");
  const form = root && root.querySelector("form[data-grade-form]");
  if (!form) return;

  // Active time: add up the spans during which the page was visible.
  let visibleSince = document.visibilityState === "visible" ? performance.now() : null;
  let spent = 0;
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") {
      visibleSince = performance.now();
    } else if (visibleSince !== null) {
      spent += performance.now() - visibleSince;
      visibleSince = null;
    }
  });
  const activeMs = () =>
    Math.round(spent + (visibleSince !== null ? performance.now() - visibleSince : 0));

  // One submission per screen: a key held down or a double click must not send twice.
  let sending = false;
  form.addEventListener("submit", (event) => {
    if (sending) {
      event.preventDefault();
      return;
    }
    sending = true;
    const field = form.querySelector("[data-active-ms]");
    if (field) field.value = String(activeMs());
  });
  // Coming back through the browser's history restores the page from its cache: allow again.
  window.addEventListener("pageshow", () => {
    sending = false;
  });

  const submitWith = (button) => {
    if (!button || sending) return;
    form.requestSubmit(button);
  };
  const note = form.querySelector("[data-note]");

  if (note) {
    note.addEventListener("keydown", (event) => {
      if (root.dataset.shortcuts !== "on") return;
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        submitWith(form.querySelector("[data-cant-tell]"));
      } else if (event.key === "Escape") {
        note.blur();
      }
    });
  }

  const typing = (target) =>
    target instanceof Element &&
    (target.closest("input, textarea, select, [contenteditable]") !== null ||
      target.isContentEditable);

  document.addEventListener("keydown", (event) => {
    if (root.dataset.shortcuts !== "on") return;
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
    if (typing(event.target)) return;
    const key = event.key;
    if (/^[0-9]$/.test(key)) {
      const button = form.querySelector(`button[name="grade"][value="${key}"]`);
      if (button) {
        event.preventDefault();
        submitWith(button);
      }
      return;
    }
    if (key === "u" || key === "Backspace") {
      const back = root.querySelector("a[data-back]");
      if (back) {
        event.preventDefault();
        window.location.assign(back.href);
      }
    } else if (key === "s") {
      event.preventDefault();
      submitWith(form.querySelector("[data-skip]"));
    } else if (key === "c") {
      if (note) {
        event.preventDefault();
        note.focus();
      }
    }
  });
})();
