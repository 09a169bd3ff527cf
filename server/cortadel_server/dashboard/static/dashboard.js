// Progressive enhancement only: every page works without this file.
// "/" moves to the page's first search box; a <time> shows how long ago it was on hover.
"use strict";
document.addEventListener("keydown", (event) => {
  const typing = event.target instanceof HTMLElement && event.target.closest("input, textarea, select");
  if (event.key === "/" && !typing) {
    const box = document.querySelector('input[type="search"]');
    if (box) { event.preventDefault(); box.focus(); }
  }
});
const ago = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
for (const time of document.querySelectorAll("time[datetime]")) {
  const seconds = (Date.parse(time.dateTime) - Date.now()) / 1000;
  if (Number.isNaN(seconds)) continue;
  const [value, unit] = Math.abs(seconds) < 3600 ? [seconds / 60, "minute"]
    : Math.abs(seconds) < 86400 ? [seconds / 3600, "hour"] : [seconds / 86400, "day"];
  time.title = ago.format(Math.round(value), unit);
}
