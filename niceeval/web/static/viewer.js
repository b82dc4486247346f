// niceeval viewer: small progressive enhancements. Every page works without this file.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // Filter forms submit as soon as a select or checkbox changes.
  for (const field of document.querySelectorAll("form[data-autosubmit] select, form[data-autosubmit] input[type=checkbox]")) {
    field.addEventListener("change", () => field.form.submit());
  }
});
