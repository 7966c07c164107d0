// Draw the Vega-Lite charts of a page (the explorer of notebook 4). The book's myst-nb plugin
// (socm_lib/viz/mystnb.py) writes each chart as its specification, JSON inside <div class="vega-lite-chart">,
// and loads Vega, Vega-Lite and vega-embed from _static/vega/ before this file; vega-embed draws the chart
// with the options the specification carries (usermeta.embedOptions). No data are fetched: they are inline.
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("div.vega-lite-chart").forEach(function (holder) {
    var spec = JSON.parse(holder.querySelector("script[type='application/json']").textContent);
    var target = document.createElement("div");
    holder.appendChild(target);
    vegaEmbed(target, spec).catch(function (error) {
      target.textContent = "This chart could not be drawn: " + error;
      console.error(error);
    });
  });
});
