// Run upload with a progress bar: the form is posted with XMLHttpRequest so the browser can
// report upload progress; the server answers JSON (where to go next, or the errors to show).
// Without JavaScript the same form posts normally and the server renders the result.
(function () {
  "use strict";

  function sizeText(bytes) {
    if (bytes >= 1024 * 1024) return (bytes / (1024 * 1024)).toFixed(1) + " MB";
    if (bytes >= 1024) return (bytes / 1024).toFixed(0) + " KB";
    return bytes + " bytes";
  }

  function showErrors(box, errors) {
    box.replaceChildren();
    const summary = document.createElement("div");
    summary.className = "error-summary";
    summary.setAttribute("role", "alert");
    summary.tabIndex = -1;
    const heading = document.createElement("h2");
    heading.textContent = "There is a problem";
    const list = document.createElement("ul");
    errors.forEach((item) => {
      item.errors.forEach((message) => {
        const li = document.createElement("li");
        const text = item.label + ": " + message;
        if (item.field) {
          const link = document.createElement("a");
          link.href = "#" + item.field;
          link.textContent = text;
          li.appendChild(link);
        } else {
          li.textContent = text;
        }
        list.appendChild(li);
      });
    });
    summary.append(heading, list);
    box.appendChild(summary);
    summary.focus();
  }

  function init(form) {
    const box = document.getElementById(form.dataset.uploadProgress);
    const errorsBox = document.getElementById(form.dataset.uploadErrors);
    if (!box || !errorsBox || !window.FormData || !window.XMLHttpRequest) return;
    const bar = box.querySelector("progress");
    const status = box.querySelector("[data-upload-status]");
    const submit = form.querySelector("[type=submit]");

    function finish(errors) {
      showErrors(errorsBox, errors);
      box.hidden = true;
      if (submit) submit.disabled = false;
    }

    // After a lost session (signed out in another tab, cookie gone), the chosen file stays
    // selected; once /session says this browser is signed in again, the upload is re-sent
    // with the new token, on its own.
    let waiting = null;
    function signedInAgain() {
      return fetch("/session", { headers: { Accept: "application/json" }, cache: "no-store" })
        .then((r) => r.json())
        .then((state) => {
          if (!state.signed_in) return false;
          form.querySelectorAll("input[name=csrf_token]").forEach((input) => { input.value = state.csrf_token; });
          const meta = document.querySelector("meta[name=csrf-token]");
          if (meta) meta.content = state.csrf_token;
          return true;
        })
        .catch(() => false);
    }
    function resumeWhenSignedIn() {
      if (waiting) return;
      const check = () => signedInAgain().then((ok) => {
        if (!ok || !waiting) return;
        window.clearInterval(waiting);
        window.removeEventListener("focus", check);
        waiting = null;
        status.textContent = "Signed in again: sending your upload again…";
        send();
      });
      waiting = window.setInterval(check, 2000);
      window.addEventListener("focus", check);
    }
    function lost(data) {
      const item = { field: null, label: "Upload", errors: [data.message] };
      finish([item]);
      const summary = errorsBox.querySelector(".error-summary");
      if (!data.signed_in && summary) {
        const p = document.createElement("p");
        const link = document.createElement("a");
        link.href = data.login;
        link.target = "_blank";
        link.rel = "noopener";
        link.id = "upload-sign-in";
        link.textContent = "Sign in again (opens a new tab)";
        p.append(link, " — your file stays chosen here and is sent as soon as you are signed in.");
        summary.appendChild(p);
      }
      if (data.signed_in) signedInAgain().then((ok) => { if (ok) send(); });
      else resumeWhenSignedIn();
    }

    function send() {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", form.getAttribute("action") || window.location.href);
      xhr.setRequestHeader("X-Requested-With", "XMLHttpRequest");
      xhr.setRequestHeader("Accept", "application/json");
      xhr.upload.addEventListener("progress", (e) => {
        if (!e.lengthComputable) return;
        bar.max = e.total;
        bar.value = e.loaded;
        bar.textContent = Math.round((100 * e.loaded) / e.total) + "%";
        status.textContent = sizeText(e.loaded) + " of " + sizeText(e.total) + " sent";
      });
      xhr.upload.addEventListener("load", () => {
        bar.removeAttribute("value"); // indeterminate while the server checks and stores
        status.textContent = "Uploaded; checking and storing the run…";
      });
      xhr.addEventListener("load", () => {
        let data = null;
        try {
          data = JSON.parse(xhr.responseText);
        } catch (err) {
          data = null;
        }
        if (data && data.ok) {
          window.location.assign(data.redirect);
        } else if (data && data.error === "session") {
          lost(data);
        } else if (data && data.errors) {
          finish(data.errors);
        } else {
          const reason = xhr.status === 413 ? "the file is larger than the upload limit" : "the server answered " + xhr.status;
          finish([{ field: null, label: "Upload", errors: ["Not stored: " + reason + "."] }]);
        }
      });
      xhr.addEventListener("error", () => {
        finish([{ field: null, label: "Upload", errors: ["The upload failed (network error); nothing was stored."] }]);
      });
      errorsBox.replaceChildren();
      box.hidden = false;
      if (submit) submit.disabled = true;
      xhr.send(new FormData(form));
    }

    form.addEventListener("submit", (event) => {
      event.preventDefault();
      if (waiting) {
        window.clearInterval(waiting);
        waiting = null;
      }
      send();
    });
  }

  // The run name follows the chosen file's name (without run extensions, as the server does
  // when the name is left empty) until the user types a name of their own.
  const SUFFIXES = [".gz", ".trec", ".run", ".txt", ".tsv", ".csv", ".jsonl", ".json", ".res"];

  function nameFromFile(filename) {
    let name = filename.split(/[\\/]/).pop() || "";
    for (;;) {
      const lowered = name.toLowerCase();
      const suffix = SUFFIXES.find((s) => lowered.endsWith(s) && name.length > s.length);
      if (!suffix) return name;
      name = name.slice(0, -suffix.length);
    }
  }

  function followFileName(form) {
    const file = form.querySelector("input[type=file][name=file]");
    const name = form.querySelector("input[name=name]");
    if (!file || !name) return;
    let suggested = "";
    file.addEventListener("change", () => {
      const chosen = file.files && file.files[0] ? nameFromFile(file.files[0].name) : "";
      if (name.value === "" || name.value === suggested) {
        name.value = chosen;
        suggested = chosen;
      }
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    document.querySelectorAll("form[data-upload-progress]").forEach(followFileName);
    document.querySelectorAll("form[data-upload-progress]").forEach(init);
  });
})();
