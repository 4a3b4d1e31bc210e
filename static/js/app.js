// Site-wide behaviour: the CSRF token on htmx requests, and the store of labeling answers not
// yet acknowledged by the server.
//
// Answers given on a labeling page (static/js/labeling.js) wait in localStorage until the server
// acknowledges them, so they outlive the tab: a reload, a navigation, a closed tab or a crashed
// browser keeps them, and the next page the same user opens (in any tab, now or on a later visit)
// delivers them. They are kept per user (`<body data-user>`): a page only ever sends, counts or
// shows the signed-in user's answers; another user's wait until their owner signs in again.
//  - Each answer is its own entry, `ndcg-labeling:<user>:<upcoming-url>#<unique id>`, written once
//    and removed only once acknowledged, so tabs of the same user writing at the same time never
//    lose each other's answers (no read-modify-write of a shared list).
//  - One tab sends at a time (Web Locks, `navigator.locks`, where the browser has them) and reads
//    the store afresh before every answer, so an answer one tab had acknowledged is never sent
//    again by another. The keys acknowledged are noted in IndexedDB too, which every tab reads
//    as committed (localStorage may show one tab another's removal a moment late). Without Web
//    Locks two tabs may both send the same answer once; that is harmless: saving the verdict
//    already stored never conflicts (services/labeling/judging.py).
//  - Answers kept by an older version in the tab's sessionStorage move here on load.
// A labeling page sends its own test set's answers (and brings back a pair the server refuses for
// good); this file delivers the rest in the background. One refused here (409: changed in another
// tab; 400) stays queued: the labeling page sends it again and brings its pair back.
document.addEventListener("htmx:configRequest", (event) => {
  const meta = document.querySelector('meta[name="csrf-token"]');
  if (meta) event.detail.headers["X-CSRFToken"] = meta.content;
});

window.ndcgAnswers = (() => {
  const PREFIX = "ndcg-labeling:";
  let storage = null;
  try {
    storage = window.localStorage;
    void storage.length;
  } catch {
    storage = null; // storage off: answers live in the page until acknowledged
  }
  // Entries this page could not write (storage full or off): sent by this page only.
  const memory = new Map();
  let seq = 0;
  const newId = () =>
    window.crypto && typeof window.crypto.randomUUID === "function"
      ? window.crypto.randomUUID()
      : `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}-${seq}`;
  // Every key of a user's entries starts with prefix(user); those of one test set with
  // prefix(user, upcoming).
  const prefix = (user, upcoming) => `${PREFIX}${user}:${upcoming ? `${upcoming}#` : ""}`;
  const parse = (text) => {
    try {
      const entry = JSON.parse(text);
      return entry && typeof entry === "object" && Array.isArray(entry.fields) ? entry : null;
    } catch {
      return null;
    }
  };
  const keys = () => {
    try {
      return storage ? Object.keys(storage) : [];
    } catch {
      return [];
    }
  };
  // Oldest first (the order they were given in).
  const list = (start) => {
    const found = new Map();
    for (const key of keys()) {
      if (!key.startsWith(start) || !key.includes("#", PREFIX.length)) continue;
      const entry = parse(storage.getItem(key));
      if (entry) found.set(key, { ...entry, key });
    }
    for (const [key, entry] of memory) if (key.startsWith(start)) found.set(key, entry);
    return [...found.values()].sort(
      (a, b) => a.at - b.at || a.seq - b.seq || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
    );
  };
  const has = (key) => {
    if (memory.has(key)) return true;
    try {
      return storage !== null && storage.getItem(key) !== null;
    } catch {
      return false;
    }
  };
  const write = (key, entry) => {
    try {
      if (!storage) return false;
      storage.setItem(key, JSON.stringify(entry));
      return true;
    } catch {
      return false;
    }
  };
  // Keep one answer ({save, url, pairId, fields}) for the user; returns the stored entry.
  const add = (user, upcoming, answer) => {
    const id = newId();
    const entry = { ...answer, id, at: Date.now(), seq: seq++ };
    const key = `${prefix(user, upcoming)}${id}`;
    if (!write(key, entry)) memory.set(key, { ...entry, key });
    return { ...entry, key };
  };
  // Forget an acknowledged answer (by its own key only: nobody else's answer goes with it).
  const remove = (key) => {
    memory.delete(key);
    try {
      if (storage) storage.removeItem(key);
    } catch {
      // storage off: nothing was there
    }
  };
  // Keys of the answers the server acknowledged, in IndexedDB. A tab that takes the send lock
  // reads there what the tab before it sent: localStorage alone cannot tell it for sure, since a
  // browser may bring one tab's removals to another a moment late (Chromium keeps a copy per tab
  // process), and an answer still listed would go twice. A key is kept for a day; without
  // IndexedDB (or when it does not answer within 2 s) the store works as before.
  const ledger = (() => {
    const DAY = 24 * 60 * 60 * 1000;
    let opened = null;
    const within = (promise, fallback) =>
      Promise.race([promise, new Promise((resolve) => setTimeout(resolve, 2000, fallback))]);
    // One transaction on the "sent" store; resolves to `request`'s result once it is committed
    // (then every tab sees it), or to `fallback` on any failure.
    const run = (database, mode, act, fallback) =>
      new Promise((resolve) => {
        try {
          const transaction = database.transaction("sent", mode);
          const request = act(transaction.objectStore("sent"));
          transaction.oncomplete = () => resolve(request ? request.result : true);
          transaction.onerror = transaction.onabort = () => resolve(fallback);
        } catch {
          resolve(fallback);
        }
      });
    const prune = (database) =>
      run(database, "readwrite", (sent) => {
        const old = IDBKeyRange.upperBound(Date.now() - DAY);
        const cursor = sent.index("at").openCursor(old);
        cursor.onsuccess = () => {
          if (!cursor.result) return;
          cursor.result.delete();
          cursor.result.continue();
        };
        return null;
      }, false);
    const open = () => {
      opened =
        opened ||
        within(
          new Promise((resolve) => {
            try {
              const request = window.indexedDB.open(`${PREFIX}sent`, 1);
              request.onupgradeneeded = () =>
                request.result.createObjectStore("sent").createIndex("at", "at");
              request.onsuccess = () => {
                prune(request.result);
                resolve(request.result);
              };
              request.onerror = request.onblocked = () => resolve(null);
            } catch {
              resolve(null);
            }
          }),
          null,
        );
      return opened;
    };
    const use = async (mode, act, fallback) => {
      const database = await open();
      return database ? within(run(database, mode, act, fallback), fallback) : fallback;
    };
    return {
      // Whether this key was acknowledged (by any tab of this browser).
      has: async (key) => (await use("readonly", (sent) => sent.count(key), 0)) > 0,
      // Note the key as acknowledged; resolves once every tab can read it.
      add: (key) => use("readwrite", (sent) => sent.put({ at: Date.now() }, key), false),
    };
  })();
  // The server took this answer (or refused it for good): note that for the other tabs, then
  // forget it here.
  const done = async (key) => {
    if (!memory.has(key)) await ledger.add(key);
    remove(key);
  };
  // Whether an answer is still to be sent: kept here and not acknowledged by another tab
  // (one found acknowledged is forgotten).
  const waiting = async (key) => {
    if (!has(key)) return false;
    if (memory.has(key) || !(await ledger.has(key))) return true;
    remove(key);
    return false;
  };
  // Run `task` while no other tab of this user is sending (Web Locks; else just run it).
  const exclusive = async (user, task) => {
    if (navigator.locks && typeof navigator.locks.request === "function") {
      let ran = false;
      try {
        return await navigator.locks.request(`${PREFIX}${user}:sending`, () => {
          ran = true;
          return task();
        });
      } catch (error) {
        if (ran) throw error;
      }
    }
    return task();
  };
  // One answer to the server. Given up after 20 s (the send lock is held meanwhile); one the
  // server stored all the same is sent again later, which is harmless.
  const post = (entry, token) =>
    fetch(entry.save, {
      method: "POST",
      body: new URLSearchParams([...entry.fields, ["csrf_token", token]]),
      credentials: "same-origin",
      redirect: "manual",
      headers: { Accept: "application/json" },
      signal: typeof AbortSignal.timeout === "function" ? AbortSignal.timeout(20000) : undefined,
    });
  // Move the queues an older version kept in this tab's sessionStorage (one list per user and
  // test set, `ndcg-labeling:<user>:<upcoming-url>`) into localStorage, every user's to its owner.
  const migrate = () => {
    let session;
    try {
      session = window.sessionStorage;
      if (!storage || !session) return;
      for (const key of Object.keys(session)) {
        if (!key.startsWith(PREFIX) || key.includes("#")) continue;
        const rest = key.slice(PREFIX.length);
        const colon = rest.indexOf(":");
        if (colon <= 0) continue;
        let items;
        try {
          items = JSON.parse(session.getItem(key) || "[]");
        } catch {
          continue;
        }
        if (!Array.isArray(items)) continue;
        const user = rest.slice(0, colon);
        const upcoming = rest.slice(colon + 1);
        let kept = true;
        for (const item of items) {
          if (!item || !Array.isArray(item.fields)) continue;
          const entry = add(user, upcoming, item);
          if (memory.has(entry.key)) {
            memory.delete(entry.key);
            kept = false;
          }
        }
        if (kept) session.removeItem(key); // only once every answer is in localStorage
      }
    } catch {
      // sessionStorage off: nothing to move
    }
  };
  migrate();
  return { prefix, list, has, add, remove, done, waiting, exclusive, post };
})();

// Deliver the signed-in user's unsent answers in the background, retrying with backoff while the
// server cannot be reached. On a labeling page, labeling.js sends that test set's own answers.
(() => {
  const user = document.body.dataset.user;
  const store = window.ndcgAnswers;
  if (!user) return;
  // A labeling page showing a pair (labeling.js runs there) sends its own test set's answers.
  const root = document.querySelector("[data-labeling]");
  const labeling = root && root.querySelector("[data-card] form[data-grade-form]") ? root : null;
  const mine = store.prefix(user);
  const theirs = labeling ? store.prefix(user, labeling.dataset.upcoming) : null;
  const pending = () =>
    store.list(mine).filter((entry) => theirs === null || !entry.key.startsWith(theirs));
  const meta = document.querySelector('meta[name="csrf-token"]');
  let delay = 250;
  let timer = null;
  let running = false;
  // One pass over what is waiting; false when the server could not be reached.
  const pass = async (waiting = pending) => {
    for (const entry of waiting()) {
      if (!(await store.waiting(entry.key))) continue; // acknowledged meanwhile by another tab
      const response = await store.post(entry, meta ? meta.content : "").catch(() => null);
      if (response && response.ok) await store.done(entry.key);
      else if (!response || (response.status !== 409 && response.status !== 400)) return false;
    }
    return true;
  };
  const deliver = async () => {
    if (running || pending().length === 0) return;
    running = true;
    clearTimeout(timer);
    const done = await store.exclusive(user, pass).catch(() => false);
    running = false;
    if (done) {
      delay = 250;
    } else {
      timer = setTimeout(deliver, delay);
      delay = Math.min(delay * 2, 2000);
    }
  };
  window.addEventListener("online", deliver);
  deliver();
  // Logging out first delivers what is waiting (this test set's too); what the server cannot
  // take now stays in this browser for its owner's next visit, and the person is told so.
  const logout = document.querySelector("form[data-logout]");
  if (logout) {
    logout.addEventListener("submit", async (event) => {
      const all = () => store.list(mine);
      if (logout.dataset.confirmed || all().length === 0) return;
      event.preventDefault();
      await store.exclusive(user, () => pass(all)).catch(() => false);
      const left = all().length;
      const question =
        `${left} answer${left === 1 ? " is" : "s are"} not saved yet: the server did not take ` +
        "them now. They stay in this browser and are sent when you sign in here again. " +
        "Log out anyway?";
      if (left === 0 || window.confirm(question)) {
        logout.dataset.confirmed = "1";
        logout.requestSubmit();
      }
    });
  }
})();
