// reprobook's pages, for a screen reader and a keyboard (what the theme leaves unnamed or unreachable).
function reprobookLabel(el) {
  // what a scrolling block holds, in a few words: a table by its caption or its first column names, else its first line
  const caption = el.querySelector("caption");
  if (caption && caption.textContent.trim()) return `Table: ${caption.textContent.trim()}`;
  const heads = [...el.querySelectorAll("thead th, tr:first-child th")].map((th) => th.textContent.trim()).filter(Boolean);
  if (heads.length) return `Table of ${heads.slice(0, 3).join(", ")}${heads.length > 3 ? ", ..." : ""}`;
  const line = (el.textContent || "").trim().split("\n")[0].slice(0, 60);
  return line ? `Output: ${line}` : "Output";
}
function reprobookA11y() {
  // the sidebar's fold toggles are an icon alone: name each after the chapter it opens
  document.querySelectorAll("summary").forEach((s) => {
    if (s.textContent.trim() || s.getAttribute("aria-label")) return;
    const item = s.closest("li");
    const link = item && item.querySelector(":scope > a");
    s.setAttribute("aria-label", link ? `Sections of ${link.textContent.trim()}` : "Show or hide the sections");
  });
  // the sidebar (the site's title, search and chapters) is a landmark of its own, so no content lies outside one
  const sidebar = document.getElementById("pst-primary-sidebar");
  if (sidebar && !sidebar.getAttribute("role")) {
    sidebar.setAttribute("role", "complementary");
    sidebar.setAttribute("aria-label", "The book's chapters and search");
  }
  // a wide table or output scrolls sideways: the keyboard reaches it (tab to it, then the arrow keys), and a screen
  // reader hears what it holds; each such region has a name of its own (landmarks must be told apart)
  const names = new Set([...document.querySelectorAll("[role=region][aria-label]")].map((el) => el.getAttribute("aria-label")));
  document.querySelectorAll(".reprobook-scroll, div.cell_output, .bd-article table, .bd-article pre").forEach((el) => {
    if (el.scrollWidth > el.clientWidth + 1 && !el.hasAttribute("tabindex") && !el.closest("[role=region]")) {
      const base = reprobookLabel(el);
      let name = base;
      for (let n = 2; names.has(name); n++) name = `${base} (${n})`;
      names.add(name);
      el.setAttribute("tabindex", "0");
      el.setAttribute("role", "region");
      el.setAttribute("aria-label", name);
    }
  });
}
document.addEventListener("DOMContentLoaded", reprobookA11y);
window.addEventListener("load", reprobookA11y);  // once the plots have their size
