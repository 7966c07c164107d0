// Before the page is printed, record each display equation's natural width (its width on screen, where it
// may scroll): print.css scales an equation wider than the printed page down to the page's width.
window.addEventListener("beforeprint", () => {
  for (const math of document.querySelectorAll('mjx-container[display="true"] > mjx-math')) {
    math.parentElement.style.setProperty("--natural-width", `${math.getBoundingClientRect().width}px`);
  }
});
