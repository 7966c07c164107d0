// Set-up for the Jupyter widgets' HTML manager (html-manager/embed-amd.js), which draws the widget state embedded in
// a notebook page. Loaded after require.js and before embed-amd.js (nb_ipywidgets_js in _config.yml), on pages with
// widgets only. Without it the console of such a page shows errors:
//
// - The manager loads its icon fonts from beside the module that RequireJS says it came from. Its modules are
//   defined by name, so RequireJS places them under the page's own folder (notebooks/@jupyter-widgets/html-manager/
//   dist/), where no font is. Map that module path to the vendored copy in this book's _static/, beside this file.
// - The widgets typeset their labels with MathJax 2's API, MathJax.Hub.Queue(["Typeset", MathJax.Hub, element]);
//   the book loads MathJax 3, which has no Hub. Give them a Hub that typesets with MathJax 3: on the configuration
//   object while MathJax loads (it is deferred), then on MathJax itself once it is ready.
require.config({
  paths: {"@jupyter-widgets/html-manager/dist": new URL("html-manager", document.currentScript.src).href},
});

(function () {
  const waiting = [];
  const hub = {
    Queue(command) {
      const element = command[2];
      if (window.MathJax && MathJax.typesetPromise) MathJax.typesetPromise([element]);
      else waiting.push(element);
    },
  };
  const config = (window.MathJax = window.MathJax || {});
  config.Hub = hub;
  config.startup = Object.assign(config.startup || {}, {
    ready() {
      MathJax.startup.defaultReady();
      MathJax.Hub = hub;
      MathJax.startup.promise.then(() => waiting.length && MathJax.typesetPromise(waiting.splice(0)));
    },
  });
})();
