// The tokens page's Copy buttons. The page hides them, so that without this script it shows just the tokens in
// read-only text areas, selectable as ever. Where the clipboard cannot be written (a page on plain http other than
// localhost, a refused permission), the button selects the token instead and says how to copy it.
for (const button of document.querySelectorAll("button[data-copy]")) {
  const field = document.getElementById(button.dataset.copy);
  const status = document.getElementById(`${button.dataset.copy}-status`);
  if (!(field instanceof HTMLTextAreaElement) || !status) continue;
  let clear;
  const say = (text) => {
    status.textContent = text;
    clearTimeout(clear);
    clear = setTimeout(() => (status.textContent = ""), 4000);
  };
  button.addEventListener("click", async () => {
    try {
      if (!navigator.clipboard) throw new Error("no clipboard here");
      await navigator.clipboard.writeText(field.value);
      say("Copied");
    } catch {
      field.focus();
      field.select();
      say("Selected: press Ctrl+C (⌘C on a Mac) to copy");
    }
  });
  button.hidden = false;
}
