// reprobook's pages, for a screen reader and a keyboard (what the theme leaves unnamed or unreachable).
function reprobookA11y() {
  // the sidebar's fold toggles are an icon alone: name each after the chapter it opens
  document.querySelectorAll("summary").forEach((s) => {
    if (s.textContent.trim() || s.getAttribute("aria-label")) return;
    const item = s.closest("li");
    const link = item && item.querySelector(":scope > a");
    s.setAttribute("aria-label", link ? `Sections of ${link.textContent.trim()}` : "Show or hide the sections");
  });
  // a wide table or output scrolls sideways: the keyboard reaches it (tab to it, then the arrow keys)
  document.querySelectorAll(".reprobook-scroll, div.cell_output, .bd-article table, .bd-article pre").forEach((el) => {
    if (el.scrollWidth > el.clientWidth + 1 && !el.hasAttribute("tabindex")) {
      el.setAttribute("tabindex", "0");
      el.setAttribute("role", "region");
      el.setAttribute("aria-label", "Scrollable output");
    }
  });
}
document.addEventListener("DOMContentLoaded", reprobookA11y);
window.addEventListener("load", reprobookA11y);  // once the plots have their size
