// Keyboard-first labeling at an annotator's pace.
//
// Keys: a digit grades and moves on, `u`/Backspace goes back to the last pair, `s` skips, `c`
// focuses the note for a "can't tell" answer (Enter sends it). Keys are ignored while typing and
// when the user switched shortcuts off.
//
// Without JavaScript every answer is a plain form POST. With it, the page keeps the next few
// pairs prefetched as server-rendered cards (none of them leased), shows the next one the moment
// an answer is given, leases the pair it shows, and saves answers in the background:
//  - answers wait in localStorage, one entry each, per user (the store is in static/js/app.js):
//    a reload, a navigation, a closed tab or a crashed browser keeps them, and whichever page
//    this user opens next (any tab, any later visit) delivers them; another user signed in in
//    the same browser never sends or sees them;
//  - they are sent one at a time, oldest first, by one tab at a time (Web Locks where the browser
//    has them), read afresh before each send so that an answer acknowledged by another tab of the
//    same user is not sent again, and retried with backoff until the server acknowledges them;
//    a tab sends the answers other tabs gave on this test set too (they share the store);
//  - the indicator beside the progress says saved / saving / not saved yet (and why), counting
//    this user's answers to this test set not yet acknowledged, from every tab;
//  - an answer the server refuses for good (409: changed in another tab; 400) brings its pair
//    back on the server's own page, which shows both answers or the reason;
//  - leaving the page gives the shown pair's lease back (navigator.sendBeacon).
(() => {
  const root = document.querySelector("[data-labeling]");
  if (!root || !root.querySelector("[data-card] form[data-grade-form]")) return;
  const stateLine = root.querySelector("[data-save-state]");
  const progressBox = root.querySelector("[data-progress]");
  const AHEAD = 5;
  const storeKey = `ndcg-labeling:${root.dataset.user}:${root.dataset.upcoming}`;
  let card = root.querySelector("[data-card]");
  const token = () => {
    const field = root.querySelector("input[name=csrf_token]");
    return field ? field.value : "";
  };
  const post = (url, fields) =>
    fetch(url, {
      method: "POST",
      body: new URLSearchParams([...fields, ["csrf_token", token()]]),
      credentials: "same-origin",
      redirect: "manual",
      headers: { Accept: "application/json" },
    });
  const jsonOf = async (response) =>
    response && response.ok && (response.headers.get("content-type") || "").includes("json")
      ? response.json().catch(() => null)
      : null;

  // Active time: the spans during which the page was visible, counted per card.
  let visibleSince = null;
  let spent = 0;
  const resetTimer = () => {
    spent = 0;
    visibleSince = document.visibilityState === "visible" ? performance.now() : null;
  };
  resetTimer();
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") {
      visibleSince = performance.now();
    } else if (visibleSince !== null) {
      spent += performance.now() - visibleSince;
      visibleSince = null;
    }
  });
  const activeMs = () =>
    Math.round(spent + (visibleSince !== null ? performance.now() - visibleSince : 0));

  // ---- The save queue (kept in localStorage by static/js/app.js) ---------------------------
  const store = window.ndcgAnswers;
  const user = root.dataset.user;
  const scope = store.prefix(user, root.dataset.upcoming);
  // This test set's answers not yet acknowledged, from every tab of this user, oldest first.
  const pending = () => store.list(scope);
  let sending = false;
  let failures = 0;
  let reason = "";
  let retryTimer = null;
  let adoptTimer = null;
  let comingBack = null;

  const say = (state, text) => {
    if (!stateLine) return;
    stateLine.hidden = false;
    stateLine.dataset.state = state;
    stateLine.textContent = text;
  };
  const answers = (n) => `${n} answer${n === 1 ? "" : "s"}`;
  // A word about the pair on screen (kept until it is answered), then the queue's state.
  let notice = "";
  const report = () => {
    const n = pending().length;
    if (n === 0) say("saved", `${notice}All answers saved`);
    else if (failures === 0) say("saving", `${notice}Saving ${answers(n)}…`);
    else say("failed", `${notice}Not saved yet: ${reason}. ${answers(n)} kept here; retrying.`);
  };

  // The pair comes back on the server's own page (the conflict page or the form with its error).
  const bringBack = (item) => {
    window.removeEventListener("beforeunload", warn);
    const form = document.createElement("form");
    form.method = "post";
    form.action = item.url;
    for (const [name, value] of [...item.fields, ["csrf_token", token()]]) {
      const input = document.createElement("input");
      input.type = "hidden";
      input.name = name;
      input.value = value;
      form.append(input);
    }
    document.body.append(form);
    form.submit();
  };

  // Send what is waiting, oldest first, while this tab holds the send lock (read afresh before
  // each answer: another tab may have sent some meanwhile). False when the server could not
  // take one; every answer it acknowledged or refused is forgotten at once.
  const pass = async () => {
    for (let item = pending()[0]; item; item = pending()[0]) {
      report();
      if (!(await store.waiting(item.key))) continue; // another tab sent it
      const response = await store.post(item, token()).catch(() => null);
      const body = await jsonOf(response);
      if (body && body.saved) {
        await store.done(item.key);
        failures = 0;
        if (progressBox && body.progress) progressBox.innerHTML = body.progress;
      } else if (response && (response.status === 409 || response.status === 400)) {
        await store.done(item.key);
        failures = 0;
        comingBack = comingBack || item;
        say("failed", "An answer was not saved; its pair comes back…");
      } else {
        if (!response) reason = "the server cannot be reached";
        else if (response.type === "opaqueredirect") reason = "you are signed out (sign in again)";
        else reason = `the server answered ${response.status}`;
        return false;
      }
    }
    return true;
  };
  const flush = async () => {
    if (sending) return;
    sending = true;
    clearTimeout(retryTimer);
    clearTimeout(adoptTimer);
    report();
    const done = await store.exclusive(user, pass).catch(() => false);
    sending = false;
    if (!done) {
      failures += 1;
      report();
      retryTimer = setTimeout(flush, Math.min(250 * 2 ** (failures - 1), 2000));
    } else if (pending().length) {
      flush(); // given meanwhile, after the pass had looked
    } else {
      report();
      if (comingBack) bringBack(comingBack);
    }
  };
  // Another tab of this user changed the store: show the new count. Answers another tab left
  // behind (closed while offline, say) are sent from here after a moment, unless that tab does.
  window.addEventListener("storage", (event) => {
    if (event.storageArea !== window.localStorage) return;
    if (event.key !== null && !event.key.startsWith(scope)) return;
    report(); // even while sending: a pass that is failing would otherwise show the old count
    if (sending) return;
    if (failures === 0 && event.newValue !== null) {
      clearTimeout(adoptTimer);
      adoptTimer = setTimeout(flush, 2000);
    }
  });
  window.addEventListener("online", () => {
    if (!sending && failures > 0) flush();
  });
  const warn = (event) => {
    if (pending().length > 0) {
      event.preventDefault();
      event.returnValue = "";
    }
  };
  window.addEventListener("beforeunload", warn);
  // Run `go` once every answer is acknowledged (back, or the end of the queue).
  const afterSaved = (go) => {
    if (pending().length === 0) go();
    else setTimeout(() => afterSaved(go), 100);
  };

  // ---- Prefetched cards -------------------------------------------------------------------
  const buffer = [];
  const seen = new Set([card.dataset.pairId, ...pending().map((item) => String(item.pairId))]);
  let fetching = null;
  let exhausted = false;
  const prefetch = () => {
    if (fetching || buffer.length >= AHEAD) return fetching || Promise.resolve();
    const last = buffer.length ? buffer[buffer.length - 1].query_id : card.dataset.queryId;
    const params = new URLSearchParams({
      n: String(AHEAD - buffer.length),
      query: String(last),
      exclude: [...seen].slice(-400).join(","),
    });
    fetching = fetch(`${root.dataset.upcoming}?${params}`, {
      credentials: "same-origin",
      redirect: "manual",
      headers: { Accept: "application/json" },
    })
      .catch(() => null)
      .then(jsonOf)
      .then((body) => {
        fetching = null;
        if (!body) return false;
        for (const next of body.cards) {
          if (seen.has(String(next.pair_id))) continue;
          seen.add(String(next.pair_id));
          const template = document.createElement("template");
          template.innerHTML = next.html;
          buffer.push({ ...next, node: template.content.firstElementChild });
        }
        exhausted = body.cards.length === 0 && buffer.length === 0;
        return true;
      });
    return fetching;
  };

  const lease = (shown) => {
    post(shown.dataset.lease, [])
      .then(jsonOf)
      .then((body) => {
        // Taken by others meanwhile: go on to the next one, unless already answered.
        if (body && body.leased === false && shown === card && !card.dataset.answered) {
          card.dataset.answered = "taken";
          advance();
          notice = "The pair before this one was just completed by others. ";
          report();
        }
      })
      .catch(() => {});
  };

  let previousUrl = null;
  const showCard = (next) => {
    card.replaceWith(next.node);
    card = next.node;
    resetTimer();
    history.replaceState(null, "", card.dataset.url);
    for (const field of root.querySelectorAll("[data-follows-pair]")) field.value = card.dataset.url;
    const back = card.querySelector("[data-back], [data-back-off]");
    if (back && previousUrl) {
      const link = document.createElement("a");
      link.className = "button";
      link.href = previousUrl;
      link.rel = "prev";
      link.dataset.back = "";
      link.innerHTML = back.innerHTML;
      link.removeAttribute("aria-disabled");
      back.replaceWith(link);
    }
    window.scrollTo(0, 0);
    lease(card);
    prefetch();
  };

  const advance = () => {
    const next = buffer.shift();
    if (next) {
      showCard(next);
      return;
    }
    card.classList.add("waiting");
    say("saving", "Loading the next pair…");
    prefetch().then((ok) => {
      if (buffer.length) showCard(buffer.shift());
      else if (ok && exhausted) afterSaved(() => window.location.assign(root.dataset.next));
      else setTimeout(advance, 500);
    });
  };

  // One answer per card: a key held down or a double click sends once.
  const answer = (button) => {
    const form = card.querySelector("form[data-grade-form]");
    if (!form || card.dataset.answered) return;
    card.dataset.answered = "1";
    notice = "";
    const fields = [...new FormData(form).entries()].filter(
      ([name]) => !["csrf_token", "grade", "action", "active_ms"].includes(name),
    );
    fields.push(["active_ms", String(activeMs())]);
    if (button && button.name) fields.push([button.name, button.value]);
    const pairId = card.dataset.pairId;
    store.add(user, root.dataset.upcoming, {
      save: card.dataset.save,
      url: card.dataset.url,
      pairId,
      fields,
    });
    seen.add(pairId);
    previousUrl = card.dataset.url;
    advance();
    flush();
  };

  root.addEventListener("submit", (event) => {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.matches("[data-card] form[data-grade-form]")) {
      return;
    }
    event.preventDefault();
    answer(event.submitter);
  });
  const goBack = (href) => {
    const n = pending().length;
    if (n) say("saving", `Saving ${answers(n)}, then back…`);
    afterSaved(() => window.location.assign(href));
  };
  root.addEventListener("click", (event) => {
    const link = event.target instanceof Element && event.target.closest("a[data-back]");
    if (link) {
      event.preventDefault();
      goBack(link.href);
    }
  });
  // Leaving without answering gives the shown pair back to the pool at once.
  window.addEventListener("pagehide", () => {
    if (!card.dataset.answered && navigator.sendBeacon) {
      navigator.sendBeacon(card.dataset.release, new URLSearchParams({ csrf_token: token() }));
    }
  });

  const typing = (target) =>
    target instanceof Element &&
    (target.closest("input, textarea, select, [contenteditable]") !== null ||
      target.isContentEditable);
  const button = (selector) => card.querySelector(`form[data-grade-form] ${selector}`);

  root.addEventListener("keydown", (event) => {
    const note = event.target instanceof Element && event.target.closest("[data-note]");
    if (!note || root.dataset.shortcuts !== "on") return;
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      answer(button("[data-cant-tell]"));
    } else if (event.key === "Escape") {
      note.blur();
    }
  });
  document.addEventListener("keydown", (event) => {
    if (root.dataset.shortcuts !== "on") return;
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
    if (typing(event.target)) return;
    const key = event.key;
    if (/^[0-9]$/.test(key)) {
      const grade = button(`button[name="grade"][value="${key}"]`);
      if (grade) {
        event.preventDefault();
        answer(grade);
      }
    } else if (key === "u" || key === "Backspace") {
      const back = card.querySelector("a[data-back]");
      if (back) {
        event.preventDefault();
        goBack(back.href);
      }
    } else if (key === "s") {
      event.preventDefault();
      answer(button("[data-skip]"));
    } else if (key === "c") {
      const note = card.querySelector("[data-note]");
      if (note) {
        event.preventDefault();
        note.focus();
      }
    }
  });

  lease(card);
  prefetch();
  flush();
})();
