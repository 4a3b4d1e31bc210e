// Ask before submitting a form marked data-confirm="question" (e.g. deleting a run).
document.addEventListener("submit", (event) => {
  const form = event.target.closest("form[data-confirm]");
  if (form && !window.confirm(form.dataset.confirm)) event.preventDefault();
});
