// Site-wide behaviour: send the CSRF token with every htmx request.
document.addEventListener("htmx:configRequest", (event) => {
  const meta = document.querySelector('meta[name="csrf-token"]');
  if (meta) event.detail.headers["X-CSRFToken"] = meta.content;
});
