// Layout helpers of every page, all optional (the pages work without them):
//  - the test set's menu groups (<details>) behave like menus: opening one closes the others,
//    and Escape or a click elsewhere closes it (Escape gives the focus back to its summary);
//  - a table too wide for its box scrolls inside it (.table-scroll); such a box is made a
//    focusable, named region so that keyboard users can scroll it too (WCAG 2.1.1), and only
//    then, so narrow tables add no Tab stop;
//  - a same-page skip link ("Skip to grades") moves the focus to its target, not only the view;
//  - a long list of checkboxes (the compare page's run picker) or of options (the gate's run
//    selects) gets a filter box: typing hides the runs whose name does not contain the text;
//    checked boxes and selected options always stay in view.
(() => {
  const menus = () => document.querySelectorAll("details.menu");
  document.addEventListener(
    "toggle",
    (event) => {
      const opened = event.target;
      if (!(opened instanceof HTMLDetailsElement) || !opened.matches(".menu") || !opened.open) return;
      for (const other of menus()) if (other !== opened) other.open = false;
    },
    true,
  );
  document.addEventListener("click", (event) => {
    for (const menu of menus()) if (menu.open && !menu.contains(event.target)) menu.open = false;
  });
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    for (const menu of menus()) {
      if (!menu.open) continue;
      menu.open = false;
      menu.querySelector("summary").focus();
    }
  });

  const markScrollers = () => {
    for (const box of document.querySelectorAll(".table-scroll")) {
      if (box.scrollWidth > box.clientWidth + 1) {
        const caption = box.querySelector("caption");
        box.setAttribute("tabindex", "0");
        box.setAttribute("role", "region");
        box.setAttribute("aria-label", caption ? caption.textContent.trim() : "Table");
      } else if (box.getAttribute("role") === "region") {
        box.removeAttribute("tabindex");
        box.removeAttribute("role");
        box.removeAttribute("aria-label");
      }
    }
  };
  document.addEventListener("DOMContentLoaded", markScrollers);
  document.addEventListener("htmx:afterSettle", markScrollers);
  window.addEventListener("resize", markScrollers);

  for (const filter of document.querySelectorAll("input[data-filter-labels], input[data-filter-options]")) {
    const box = filter.closest("fieldset, form");
    const status = box.querySelector("[data-filter-status]");
    // The items filtered: a picker's checkbox labels, or the <option>s of the selects marked
    // data-filtered (the gate's runs); a checked box or a selected option always stays.
    const options = filter.hasAttribute("data-filter-options");
    const items = options
      ? [...box.querySelectorAll("select[data-filtered] option")]
      : [...box.querySelectorAll("label")].filter((label) => !label.contains(filter));
    const kept = (item) => (options ? item.selected : item.querySelector("input:checked") !== null);
    // The runs counted: one per value (the gate's two selects list the same runs).
    const key = (item) => (options ? item.value : item);
    const total = new Set(items.map(key)).size;
    const apply = () => {
      const wanted = filter.value.trim().toLowerCase();
      const shown = new Set();
      for (const item of items) {
        const visible = kept(item) || !wanted || item.textContent.toLowerCase().includes(wanted);
        item.hidden = !visible;
        if (visible) shown.add(key(item));
      }
      if (status) status.textContent = wanted ? `${shown.size} of ${total} runs shown` : "";
    };
    filter.hidden = false;
    filter.closest("label").hidden = false;
    filter.addEventListener("input", apply);
    // A newly chosen option must stay in view, the one it replaced may go.
    if (options) box.addEventListener("change", (event) => event.target.matches("select[data-filtered]") && apply());
    // Enter filters; it must not send the form half-chosen.
    filter.addEventListener("keydown", (event) => {
      if (event.key === "Enter") event.preventDefault();
    });
  }

  document.addEventListener("click", (event) => {
    const link = event.target instanceof Element && event.target.closest("a[data-skip-to]");
    if (!link) return;
    // The first of the listed targets on the page (the grade buttons exist only while a
    // chunk of the run's top k is unjudged).
    const target = link
      .getAttribute("data-skip-to")
      .split(",")
      .map((selector) => document.querySelector(selector))
      .find(Boolean);
    if (!target) return;
    event.preventDefault();
    if (target.tabIndex < 0 && !target.hasAttribute("tabindex")) target.setAttribute("tabindex", "-1");
    target.focus();
    target.scrollIntoView({ block: "center" });
  });
})();
