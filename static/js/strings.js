/* The words of the page's scripts, in the page's language: the string table the server embeds as JSON in
   <script type="application/json" id="page-strings"> (app/i18n.py builds it from the same catalogue as
   the page). Messages are "%(name)s" templates; plural messages hold one form per CLDR plural category,
   chosen with Intl.PluralRules for the page's <html lang>. */
(function () {
  "use strict";

  if (window.PageStrings) {
    return;
  }

  var table = null;

  function load() {
    if (table === null) {
      var source = document.getElementById("page-strings");
      try {
        table = source ? JSON.parse(source.textContent) : {};
      } catch (error) {
        table = {};
      }
    }
    return table;
  }

  function fill(template, values) {
    return String(template)
      .replace(/%\((\w+)\)s/g, function (whole, name) {
        return Object.prototype.hasOwnProperty.call(values, name) ? String(values[name]) : whole;
      })
      .replace(/%%/g, "%");
  }

  function pluralCategory(count) {
    try {
      return new Intl.PluralRules(document.documentElement.lang || "en").select(count);
    } catch (error) {
      return count === 1 ? "one" : "other";
    }
  }

  window.PageStrings = {
    // The message `key` with its %(name)s placeholders filled from `values`.
    text: function (key, values) {
      var template = load()[key];
      return fill(template === undefined ? key : template, values || {});
    },
    // The plural message `key` for `count` (its %(num)s is the count).
    plural: function (key, count, values) {
      var forms = load()[key] || {};
      var template = forms[pluralCategory(count)] || forms.other || key;
      return fill(template, Object.assign({ num: count }, values || {}));
    },
  };
})();
