// A space's list follows the space's change notices (server-sent events): on each
// change, the list is read again from the server, which escapes what it renders.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const list = document.getElementById("memories");
  const status = document.getElementById("live-status");
  if (list && list.dataset.events && window.EventSource) {
    const events = new EventSource(list.dataset.events);
    let reading = Promise.resolve();
    events.addEventListener("change", (event) => {
      const change = JSON.parse(event.data);
      reading = reading.then(async () => {
        const answer = await fetch(list.dataset.list, { credentials: "same-origin" });
        if (answer.ok) {
          list.innerHTML = await answer.text();
          status.textContent = `${change.by} ${change.kind} a memory`;
        }
      });
    });
    events.addEventListener("open", () => { status.textContent = "Live: changes appear here."; });
    // the session ended or the space is no longer readable: no reconnecting
    events.addEventListener("end", () => {
      events.close();
      status.textContent = "Live updates have ended: reload the page.";
    });
  }
  for (const form of document.querySelectorAll("form[data-confirm]")) {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  }
});
