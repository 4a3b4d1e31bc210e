// Site-wide behaviour: send the CSRF token with every htmx request.
document.addEventListener("htmx:configRequest", (event) => {
  const meta = document.querySelector('meta[name="csrf-token"]');
  if (meta) event.detail.headers["X-CSRFToken"] = meta.content;
});

// Answers given on a labeling page and not yet acknowledged wait in this tab's sessionStorage
// (static/js/labeling.js). Every other page of the site delivers them in the background, so
// leaving the labeling page never strands an answer. One the server refuses for good (409,
// 400) stays queued: the labeling page sends it again and brings its pair back.
(() => {
  const user = document.body.dataset.user;
  if (!user || document.querySelector("[data-labeling]")) return;
  const prefix = `ndcg-labeling:${user}:`;
  const keys = Object.keys(sessionStorage).filter((key) => key.startsWith(prefix));
  if (keys.length === 0) return;
  const meta = document.querySelector('meta[name="csrf-token"]');
  const read = (key) => {
    try {
      return JSON.parse(sessionStorage.getItem(key) || "[]");
    } catch {
      return [];
    }
  };
  let delay = 250;
  const deliver = async () => {
    let unreachable = false;
    for (const key of keys) {
      const kept = [];
      for (const item of read(key)) {
        if (unreachable) {
          kept.push(item);
          continue;
        }
        const response = await fetch(item.save, {
          method: "POST",
          body: new URLSearchParams([...item.fields, ["csrf_token", meta ? meta.content : ""]]),
          credentials: "same-origin",
          redirect: "manual",
          headers: { Accept: "application/json" },
        }).catch(() => null);
        if (response && response.ok) continue; // acknowledged
        kept.push(item);
        if (!response || (response.status !== 409 && response.status !== 400)) unreachable = true;
      }
      if (kept.length) sessionStorage.setItem(key, JSON.stringify(kept));
      else sessionStorage.removeItem(key);
    }
    if (unreachable) {
      setTimeout(deliver, delay);
      delay = Math.min(delay * 2, 2000);
    }
  };
  deliver();
})();
