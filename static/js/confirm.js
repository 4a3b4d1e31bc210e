// Ask before submitting a form marked data-confirm="question" (e.g. deleting a run).
// data-confirm-fill="name ..." puts the current value of those fields where the question says
// {name}, so the question states what is about to happen (e.g. the depth an archive keeps).
document.addEventListener("submit", (event) => {
  const form = event.target.closest("form[data-confirm]");
  if (!form) return;
  const fill = (form.dataset.confirmFill || "").split(/\s+/).filter(Boolean);
  let question = form.dataset.confirm;
  for (const name of fill) {
    const field = form.elements.namedItem(name);
    if (field && "value" in field) question = question.split(`{${name}}`).join(field.value);
  }
  if (!window.confirm(question)) event.preventDefault();
});
