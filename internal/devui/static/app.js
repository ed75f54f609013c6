// The slackbot dev page: a Slack look-alike over the emulator's API.
//
// Everything from the workspace is put on the page with DOM APIs
// (textContent, createElement), never parsed as HTML. The page follows the
// workspace through server-sent events and redraws from GET /state.
'use strict';

(() => {
  // ---------------------------------------------------------------- DOM

  const $ = (id) => document.getElementById(id);

  // h creates an element: h('div', {className: 'x', dataset: {...}}, child…).
  // String children become text nodes.
  function h(tag, props, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'dataset') Object.assign(e.dataset, v);
      else if (k === 'onclick' || k === 'oninput' || k === 'onkeydown') e[k] = v;
      else if (k === 'className' || k === 'textContent' || k === 'title' || k === 'type' || k === 'disabled' || k === 'value' || k === 'placeholder' || k === 'hidden') e[k] = v;
      else e.setAttribute(k, v);
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      e.append(typeof c === 'string' ? document.createTextNode(c) : c);
    }
    return e;
  }

  // ---------------------------------------------------------------- state

  const app = {
    state: null,
    user: localStorage.getItem('devui.user') || '',
    channel: localStorage.getItem('devui.channel') || '',
    thread: null, // {channel, ts}
    unread: {}, // channel id -> count of new messages
    inFlight: new Set(), // "channel/ts" of messages with a click on its way
    flash: new Map(), // "channel/ts" -> when it changed (ms)
    modalValues: {}, // view id -> {block_id: {action_id: text}}
    modalErrors: {}, // view id -> {block_id: message}
    modalKey: '', // "id/hash" of the modal on screen
    submitting: false,
    live: false,
  };

  const api = {
    async get(path) {
      const r = await fetch(path, {cache: 'no-store'});
      if (!r.ok) throw new Error(`GET ${path}: HTTP ${r.status}`);
      return r.json();
    },
    // post sends a JSON request and returns the emulator's answer. Failures
    // (slackbot refused the payload, or did not answer) become toasts.
    async post(path, body) {
      let r;
      try {
        r = await fetch(path, {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify(body)});
      } catch (err) {
        toast({error: true, title: 'The emulator did not answer', detail: String(err)});
        return {ok: false};
      }
      let data = {};
      try { data = await r.json(); } catch (_) { data = {ok: false, error: `HTTP ${r.status}`}; }
      if (!r.ok) {
        if (data.status) toast({error: true, title: `slackbot answered HTTP ${data.status}`, detail: [data.error, data.body || '(empty body)'].filter(Boolean).join('\n')});
        else toast({error: true, title: data.error || `HTTP ${r.status}`});
        data.ok = false;
      }
      return data;
    },
  };

  // ---------------------------------------------------------------- lookups

  const users = () => (app.state ? app.state.users : []);
  const people = () => users().filter((u) => !u.is_bot);
  const userByID = (id) => users().find((u) => u.id === id);
  const channelByID = (id) => (app.state ? app.state.channels.find((c) => c.id === id) : undefined);
  const groupByID = (id) => (app.state ? app.state.usergroups.find((g) => g.id === id) : undefined);
  const dmOf = (user) => 'D' + user.slice(1);
  const key = (channel, ts) => channel + '/' + ts;
  const FLASH_MS = 1500; // as the .flash animation in app.css

  function displayName(id) {
    const u = userByID(id);
    if (!u) return id || 'unknown';
    return u.display_name || u.real_name || u.name;
  }

  // role is what the user switcher says about a person: "approver" for a
  // member of a usergroup such as @approvers, else "requester".
  function role(id) {
    const g = (app.state.usergroups || []).find((g) => (g.members || []).includes(id));
    if (!g) return 'requester';
    return (g.handle || g.name || 'member').replace(/s$/, '');
  }

  function channelLabel(id) {
    const c = channelByID(id);
    if (id && id[0] === 'D') return 'slackbot';
    return c ? '#' + c.name : '#' + id;
  }

  const palette = ['#e8912d', '#2eb67d', '#1264a3', '#9f5f9e', '#e01e5a', '#36a3c9', '#c25b1c', '#4a8f3c'];
  function avatar(id, size) {
    const u = userByID(id);
    const a = h('div', {className: 'avatar', title: displayName(id), 'aria-hidden': 'true'});
    if (size) { a.style.width = a.style.height = size + 'px'; }
    if (u && u.is_bot) {
      a.style.background = '#4a154b';
      a.append(h('img', {src: BOT_AVATAR, alt: ''}));
      return a;
    }
    let n = 0;
    for (const ch of id || '?') n = (n * 31 + ch.charCodeAt(0)) >>> 0;
    a.style.background = palette[n % palette.length];
    const name = displayName(id);
    const parts = name.split(/\s+/).filter(Boolean);
    a.textContent = (parts.length > 1 ? parts[0][0] + parts[1][0] : name.slice(0, 2)).toUpperCase();
    return a;
  }

  // ---------------------------------------------------------------- emoji

  // Slack draws emoji as images; so does the page, for the ones slackbot
  // uses, so they look the same without an emoji font.
  const svg = (body) => 'data:image/svg+xml,' + encodeURIComponent(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 36 36">${body}</svg>`);
  const hourglass = (sandTop) => svg(
    '<rect x="7" y="2" width="22" height="4" rx="2" fill="#8a6a52"/><rect x="7" y="30" width="22" height="4" rx="2" fill="#8a6a52"/>' +
    '<path d="M10 6h16c0 7-5 9-5 12s5 5 5 12H10c0-7 5-9 5-12s-5-5-5-12z" fill="#ccd6dd" stroke="#99aab5" stroke-width="1.2"/>' +
    (sandTop ? '<path d="M12.5 9h11c-1 4-5 6-5.5 8h0c-.5-2-4.5-4-5.5-8z" fill="#ffac33"/>' : '') +
    '<path d="M11.5 29c1-4 5-5 6.5-7 1.5 2 5.5 3 6.5 7z" fill="#ffac33"/>');
  const circle = (fill) => svg(`<circle cx="18" cy="18" r="16" fill="${fill}"/>`);
  const EMOJI = {
    '⏳': {name: 'hourglass_flowing_sand', src: hourglass(true)},
    '⌛': {name: 'hourglass', src: hourglass(false)},
    '✅': {name: 'white_check_mark', src: svg('<rect x="2" y="2" width="32" height="32" rx="7" fill="#77b255"/><path d="M9 18.5l6 6L27 11" fill="none" stroke="#fff" stroke-width="4.5" stroke-linecap="round" stroke-linejoin="round"/>')},
    '❌': {name: 'x', src: svg('<path d="M7 7l22 22M29 7L7 29" stroke="#dd2e44" stroke-width="6.5" stroke-linecap="round"/>')},
    '💬': {name: 'speech_balloon', src: svg('<path d="M18 4C9.2 4 3 9.6 3 16.5c0 4 2.2 7.5 5.6 9.8L7 33l8.2-4.3c.9.1 1.9.2 2.8.2 8.8 0 15-5.6 15-12.4S26.8 4 18 4z" fill="#fff" stroke="#99aab5" stroke-width="2"/><circle cx="11" cy="16.5" r="2" fill="#99aab5"/><circle cx="18" cy="16.5" r="2" fill="#99aab5"/><circle cx="25" cy="16.5" r="2" fill="#99aab5"/>')},
    '⚠': {name: 'warning', src: svg('<path d="M18 3L1.5 32.5h33z" fill="#ffcc4d" stroke="#e3a300" stroke-width="1.5" stroke-linejoin="round"/><rect x="16" y="12" width="4" height="11" rx="2" fill="#231f20"/><circle cx="18" cy="27.5" r="2.3" fill="#231f20"/>')},
    '🚫': {name: 'no_entry_sign', src: svg('<circle cx="18" cy="18" r="14" fill="none" stroke="#dd2e44" stroke-width="5"/><path d="M8.5 8.5l19 19" stroke="#dd2e44" stroke-width="5"/>')},
    '⛔': {name: 'no_entry', src: svg('<circle cx="18" cy="18" r="16" fill="#dd2e44"/><rect x="7" y="15" width="22" height="6" rx="1.5" fill="#fff"/>')},
    '❓': {name: 'question', src: svg('<path d="M11 12.5C11 7.8 14.2 5 18.3 5 22.6 5 25.5 7.8 25.5 11.6c0 5.8-6.4 6.3-6.4 11" fill="none" stroke="#dd2e44" stroke-width="5" stroke-linecap="round"/><circle cx="19" cy="30" r="3.2" fill="#dd2e44"/>')},
    '❔': {name: 'grey_question', src: svg('<path d="M11 12.5C11 7.8 14.2 5 18.3 5 22.6 5 25.5 7.8 25.5 11.6c0 5.8-6.4 6.3-6.4 11" fill="none" stroke="#ccd6dd" stroke-width="5" stroke-linecap="round"/><circle cx="19" cy="30" r="3.2" fill="#ccd6dd"/>')},
    '📥': {name: 'inbox_tray', src: svg('<path d="M3 20l5-9h20l5 9v11H3z" fill="#ccd6dd" stroke="#66757f" stroke-width="1.5"/><path d="M3 20h9l2 4h8l2-4h9" fill="none" stroke="#66757f" stroke-width="1.5"/><path d="M18 2v13m-5-5l5 5 5-5" fill="none" stroke="#3b88c3" stroke-width="3" stroke-linecap="round" stroke-linejoin="round"/>')},
    '⏰': {name: 'alarm_clock', src: svg('<circle cx="18" cy="20" r="13" fill="#dd2e44"/><circle cx="18" cy="20" r="10" fill="#fff"/><path d="M18 13v7l5 3" fill="none" stroke="#292f33" stroke-width="2.5" stroke-linecap="round"/><circle cx="7" cy="7" r="4.5" fill="#dd2e44"/><circle cx="29" cy="7" r="4.5" fill="#dd2e44"/>')},
    '🚨': {name: 'rotating_light', src: svg('<path d="M8 28V18a10 10 0 0 1 20 0v10z" fill="#dd2e44"/><rect x="5" y="28" width="26" height="5" rx="1.5" fill="#66757f"/><path d="M13 18a5 5 0 0 1 5-5" fill="none" stroke="#fff" stroke-width="2.5" stroke-linecap="round"/><path d="M18 2v4M4 10l3 2.5M32 10l-3 2.5" stroke="#ffac33" stroke-width="2.5" stroke-linecap="round"/>')},
    '🟢': {name: 'large_green_circle', src: circle('#78b159')},
    '🔴': {name: 'red_circle', src: circle('#dd2e44')},
    'ℹ': {name: 'information_source', src: svg('<rect x="2" y="2" width="32" height="32" rx="6" fill="#3b88c3"/><circle cx="18" cy="10" r="2.8" fill="#fff"/><rect x="15.5" y="15" width="5" height="13" rx="1.5" fill="#fff"/>')},
    '🙂': {name: 'slightly_smiling_face', src: svg('<circle cx="18" cy="18" r="16" fill="#ffcc4d"/><ellipse cx="12.5" cy="14" rx="2" ry="3" fill="#664500"/><ellipse cx="23.5" cy="14" rx="2" ry="3" fill="#664500"/><path d="M10.5 21.5c2 3.5 5 4.5 7.5 4.5s5.5-1 7.5-4.5" fill="none" stroke="#664500" stroke-width="2" stroke-linecap="round"/>')},
    '🤖': {name: 'robot_face', src: svg('<rect x="5" y="9" width="26" height="22" rx="5" fill="#99aab5"/><circle cx="12.5" cy="19" r="3" fill="#292f33"/><circle cx="23.5" cy="19" r="3" fill="#292f33"/><rect x="12" y="25" width="12" height="2.5" rx="1.2" fill="#292f33"/><rect x="17" y="3" width="2" height="6" fill="#66757f"/><circle cx="18" cy="3" r="2.2" fill="#dd2e44"/>')},
    '📤': {name: 'outbox_tray', src: svg('<path d="M3 20l5-9h20l5 9v11H3z" fill="#ccd6dd" stroke="#66757f" stroke-width="1.5"/><path d="M18 17V4M12.5 9.5L18 4l5.5 5.5" fill="none" stroke="#3b88c3" stroke-width="3" stroke-linecap="round" stroke-linejoin="round"/>')},
    '🔓': {name: 'unlock', src: svg('<path d="M11 16V10a7 7 0 0 1 13.5-2.6" fill="none" stroke="#99aab5" stroke-width="3.5" stroke-linecap="round"/><rect x="6" y="16" width="24" height="17" rx="3" fill="#ffac33"/>')},
    '🔒': {name: 'lock', src: svg('<path d="M11 16v-5a7 7 0 0 1 14 0v5" fill="none" stroke="#99aab5" stroke-width="3.5"/><rect x="6" y="16" width="24" height="17" rx="3" fill="#ffac33"/>')},
    // The step-up messages' (bot/render_stepup.go).
    '🔐': {name: 'closed_lock_with_key', src: svg('<path d="M9 17v-5a6.5 6.5 0 0 1 13 0v5" fill="none" stroke="#99aab5" stroke-width="3.5"/><rect x="4" y="17" width="23" height="16" rx="3" fill="#ffac33"/><circle cx="28" cy="10" r="5" fill="none" stroke="#c1694f" stroke-width="3"/><path d="M25 14l-7 8m3-3l2 2" stroke="#c1694f" stroke-width="3" stroke-linecap="round"/>')},
    '🔑': {name: 'key', src: svg('<circle cx="11" cy="13" r="7.5" fill="none" stroke="#c1694f" stroke-width="4"/><path d="M16.5 18.5L31 33m-5-5l3-3m-6.5-.5l3-3" stroke="#c1694f" stroke-width="4" stroke-linecap="round"/>')},
    '🔢': {name: '1234', src: svg('<rect x="2" y="2" width="32" height="32" rx="6" fill="#3b88c3"/><text x="18" y="23.5" font-family="sans-serif" font-size="12" font-weight="bold" fill="#fff" text-anchor="middle">1234</text>')},
  };
  const SHORTCODES = {};
  for (const [ch, e] of Object.entries(EMOJI)) SHORTCODES[e.name] = ch;
  Object.assign(SHORTCODES, {
    hourglass_flowing_sand: '⏳', warning: '⚠', heavy_check_mark: '✅', speech_balloon: '💬',
    information_source: 'ℹ', robot: '🤖', slightly_smiling_face: '🙂', smile: '🙂',
  });
  const EMOJI_RE = new RegExp('(' + Object.keys(EMOJI).map((c) => c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|') + ')\uFE0F?|:([a-z0-9_+-]+):', 'gu');
  const EYE = svg('<path d="M2 18C6 10 12 7 18 7s12 3 16 11c-4 8-10 11-16 11S6 26 2 18z" fill="none" stroke="#616061" stroke-width="3"/><circle cx="18" cy="18" r="5.5" fill="#616061"/>');
  const BOT_AVATAR = svg('<rect width="36" height="36" fill="#4a154b"/><path d="M18 6l10 4v7c0 6.5-4.3 11.3-10 13-5.7-1.7-10-6.5-10-13v-7z" fill="#fff"/><path d="M13 18l3.5 3.5L23.5 14" fill="none" stroke="#2eb67d" stroke-width="3" stroke-linecap="round" stroke-linejoin="round"/>');

  // text appends s, drawing known emoji (and :shortcodes: when codes) as
  // images.
  function text(parent, s, codes = true) {
    let last = 0;
    for (const m of s.matchAll(EMOJI_RE)) {
      let ch = m[1];
      if (!ch && codes) ch = SHORTCODES[m[2]];
      if (!ch || !EMOJI[ch]) continue;
      if (m.index > last) parent.append(document.createTextNode(s.slice(last, m.index)));
      parent.append(h('img', {className: 'emoji', src: EMOJI[ch].src, alt: ch, title: ':' + EMOJI[ch].name + ':'}));
      last = m.index + m[0].length;
    }
    if (last < s.length) parent.append(document.createTextNode(s.slice(last)));
  }

  // ---------------------------------------------------------------- dates

  const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
  const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
  const ordinal = (n) => n + (n % 100 >= 11 && n % 100 <= 13 ? 'th' : ['th', 'st', 'nd', 'rd'][n % 10] || 'th');
  const sameDay = (a, b) => a.getFullYear() === b.getFullYear() && a.getMonth() === b.getMonth() && a.getDate() === b.getDate();

  function clock(d, secs) {
    let hh = d.getHours();
    const ampm = hh < 12 ? 'AM' : 'PM';
    hh = hh % 12 || 12;
    const mm = String(d.getMinutes()).padStart(2, '0');
    return secs ? `${hh}:${mm}:${String(d.getSeconds()).padStart(2, '0')} ${ampm}` : `${hh}:${mm} ${ampm}`;
  }

  function pretty(d) {
    const now = new Date();
    const y = new Date(now); y.setDate(now.getDate() - 1);
    const t = new Date(now); t.setDate(now.getDate() + 1);
    if (sameDay(d, now)) return 'Today';
    if (sameDay(d, y)) return 'Yesterday';
    if (sameDay(d, t)) return 'Tomorrow';
    return '';
  }

  function ago(d) {
    const s = Math.round((Date.now() - d.getTime()) / 1000);
    const a = Math.abs(s);
    const [n, unit] = a < 60 ? [a, 'second'] : a < 3600 ? [Math.round(a / 60), 'minute'] : a < 86400 ? [Math.round(a / 3600), 'hour'] : [Math.round(a / 86400), 'day'];
    const label = `${n} ${unit}${n === 1 ? '' : 's'}`;
    return s >= 0 ? label + ' ago' : 'in ' + label;
  }

  // slackDate formats <!date^…> tokens as Slack does, in the reader's zone.
  function slackDate(unix, format) {
    const d = new Date(unix * 1000);
    const dateNum = `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
    const date = `${MONTHS[d.getMonth()]} ${ordinal(d.getDate())}, ${d.getFullYear()}`;
    const short = `${MONTHS[d.getMonth()].slice(0, 3)} ${d.getDate()}, ${d.getFullYear()}`;
    const long = `${DAYS[d.getDay()]}, ${date}`;
    const tokens = {
      date_num: dateNum, date, date_short: short, date_long: long,
      date_pretty: pretty(d) || date, date_short_pretty: pretty(d) || short, date_long_pretty: pretty(d) || long,
      time: clock(d, false), time_secs: clock(d, true), ago: ago(d),
      day_divider_pretty: pretty(d) || `${DAYS[d.getDay()]}, ${MONTHS[d.getMonth()]} ${ordinal(d.getDate())}`,
    };
    return format.replace(/\{([a-z_]+)\}/g, (m, t) => (t in tokens ? tokens[t] : m));
  }

  const tsDate = (ts) => new Date(parseFloat(ts) * 1000);

  // ---------------------------------------------------------------- mrkdwn

  const unescape = (s) => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

  // mrkdwn renders Slack's mrkdwn: code blocks, quotes, inline code, bold,
  // italic, strike, links, mentions and dates.
  function mrkdwn(parent, src) {
    const re = /```([\s\S]*?)```/g;
    let last = 0;
    let m;
    let afterPre = false;
    while ((m = re.exec(src))) {
      let before = src.slice(last, m.index);
      if (afterPre) before = before.replace(/^\n/, '');
      before = before.replace(/\n$/, '');
      if (before) lines(parent, before);
      parent.append(h('pre', {className: 'mk-pre', textContent: unescape(m[1].replace(/^\n/, '').replace(/\n$/, ''))}));
      last = re.lastIndex;
      afterPre = true;
    }
    let rest = src.slice(last);
    if (afterPre) rest = rest.replace(/^\n/, '');
    if (rest) lines(parent, rest);
  }

  function lines(parent, s) {
    const ls = s.split('\n');
    let quote = null;
    ls.forEach((line, i) => {
      const q = /^(&gt;|>) ?/.exec(line);
      if (q) {
        if (!quote) { quote = h('div', {className: 'mk-quote'}); parent.append(quote); } else quote.append(h('br'));
        inline(quote, line.slice(q[0].length));
        return;
      }
      quote = null;
      if (i > 0 && !(ls[i - 1].match(/^(&gt;|>) ?/))) parent.append(h('br'));
      inline(parent, line);
    });
  }

  // inline renders one line: `code` first, then the rest.
  function inline(parent, s) {
    const re = /`([^`]+)`/g;
    let last = 0;
    let m;
    while ((m = re.exec(s))) {
      if (m.index > last) formatted(parent, s.slice(last, m.index));
      parent.append(h('code', {className: 'mk-code', textContent: unescape(m[1])}));
      last = re.lastIndex;
    }
    if (last < s.length) formatted(parent, s.slice(last));
  }

  const MARKS = {'*': ['b', 'mk-bold'], '_': ['i', ''], '~': ['s', '']};
  const OPEN_BEFORE = /[\s([{"'*_~\-]/;
  const CLOSE_AFTER = /[\s.,!?;:)\]}"'*_~\-]/;

  function formatted(parent, s) {
    let buf = '';
    const flush = () => { if (buf) { text(parent, unescape(buf)); buf = ''; } };
    let i = 0;
    while (i < s.length) {
      const c = s[i];
      if (c === '<') {
        const j = s.indexOf('>', i + 1);
        if (j > i + 1) {
          flush();
          control(parent, s.slice(i + 1, j));
          i = j + 1;
          continue;
        }
      }
      if (MARKS[c] && (i === 0 || OPEN_BEFORE.test(s[i - 1])) && i + 1 < s.length && !/\s/.test(s[i + 1])) {
        const j = closing(s, i, c);
        if (j > 0) {
          flush();
          const [tag, cls] = MARKS[c];
          const e = h(tag, {className: cls});
          formatted(e, s.slice(i + 1, j));
          parent.append(e);
          i = j + 1;
          continue;
        }
      }
      buf += c;
      i++;
    }
    flush();
  }

  function closing(s, i, c) {
    for (let k = i + 1; k < s.length; k++) {
      if (s[k] === '<') {
        const j = s.indexOf('>', k);
        if (j > 0) { k = j; continue; }
      }
      if (s[k] === c && k > i + 1 && !/\s/.test(s[k - 1]) && (k + 1 === s.length || CLOSE_AFTER.test(s[k + 1]))) return k;
    }
    return -1;
  }

  // control renders a <…> sequence: a mention, a channel, a usergroup, a
  // date, a special mention or a link.
  function control(parent, inner) {
    const bar = inner.indexOf('|');
    const head = bar < 0 ? inner : inner.slice(0, bar);
    const label = bar < 0 ? '' : unescape(inner.slice(bar + 1));
    if (head[0] === '@') {
      const id = head.slice(1);
      const u = userByID(id);
      parent.append(h('span', {className: 'mention' + (id === app.user ? ' self' : ''), dataset: {user: id}}, '@' + (u ? displayName(id) : (label || id))));
      return;
    }
    if (head[0] === '#') {
      const id = head.slice(1);
      const c = channelByID(id);
      const name = c && !c.is_im ? c.name : (label || id);
      parent.append(h('span', {className: 'mention channel-link', onclick: () => openChannel(id)}, '#' + name));
      return;
    }
    if (head.startsWith('!subteam^')) {
      const g = groupByID(head.slice(9));
      parent.append(h('span', {className: 'mention' + (g && (g.members || []).includes(app.user) ? ' self' : '')}, '@' + (g ? g.handle : (label.replace(/^@/, '') || head.slice(9)))));
      return;
    }
    if (head.startsWith('!date^')) {
      const [unix, format, link] = head.slice(6).split('^');
      const n = Number(unix);
      const shown = Number.isFinite(n) && format ? slackDate(n, format) : label;
      const d = h('span', {className: 'mk-date', title: Number.isFinite(n) ? new Date(n * 1000).toString() : ''});
      text(d, shown);
      parent.append(link && /^https?:/i.test(link) ? h('a', {className: 'mk-link', href: link, target: '_blank', rel: 'noopener noreferrer'}, d) : d);
      return;
    }
    if (head[0] === '!') {
      const special = {'!here': '@here', '!channel': '@channel', '!everyone': '@everyone'}[head];
      parent.append(special ? h('span', {className: 'mention self'}, special) : document.createTextNode(label || head));
      return;
    }
    const url = unescape(head);
    if (/^(https?:|mailto:)/i.test(url)) {
      parent.append(h('a', {className: 'mk-link', href: url, target: '_blank', rel: 'noopener noreferrer'}, label || url));
    } else {
      text(parent, label || url);
    }
  }

  // textObject renders a Block Kit text object.
  function textObject(parent, t) {
    if (!t || typeof t.text !== 'string') return;
    if (t.type === 'mrkdwn') mrkdwn(parent, t.text);
    else text(parent, t.text, t.emoji !== false);
  }

  // ---------------------------------------------------------------- Block Kit

  // blocks renders Block Kit. ctx: {surface: 'message'|'modal', channel,
  // ts, busy, viewID}.
  function blocks(list, ctx) {
    const root = h('div', {className: 'blocks'});
    for (const b of list || []) {
      const r = BLOCKS[b.type];
      root.append(r ? r(b, ctx) : h('div', {className: 'bk-unknown'}, `[${b.type} block]`));
    }
    return root;
  }

  const BLOCKS = {
    header(b) {
      const e = h('div', {className: 'bk-header', dataset: {blockId: b.block_id}});
      textObject(e, b.text);
      return e;
    },
    section(b, ctx) {
      const e = h('div', {className: 'bk-section', dataset: {blockId: b.block_id}});
      const main = h('div', {className: 'bk-section-main'});
      if (b.text) {
        const t = h('div', {className: 'bk-text'});
        textObject(t, b.text);
        main.append(t);
      }
      if (Array.isArray(b.fields) && b.fields.length) {
        const f = h('div', {className: 'bk-fields'});
        for (const field of b.fields) {
          const c = h('div', {className: 'bk-text'});
          textObject(c, field);
          f.append(c);
        }
        main.append(f);
      }
      e.append(main);
      if (b.accessory) e.append(h('div', {className: 'bk-accessory'}, element(b.accessory, b.block_id, ctx)));
      return e;
    },
    context(b) {
      const e = h('div', {className: 'bk-context', dataset: {blockId: b.block_id}});
      for (const el of b.elements || []) {
        if (el.type === 'image') e.append(image(el, true));
        else {
          const t = h('span', {className: 'bk-text'});
          textObject(t, el);
          e.append(t);
        }
      }
      return e;
    },
    divider() {
      return h('hr', {className: 'bk-divider'});
    },
    actions(b, ctx) {
      const e = h('div', {className: 'bk-actions', dataset: {blockId: b.block_id}});
      for (const el of b.elements || []) e.append(element(el, b.block_id, ctx));
      return e;
    },
    image(b) {
      const e = h('div', {className: 'bk-image', dataset: {blockId: b.block_id}});
      if (b.title) {
        const t = h('div', {className: 'bk-text'});
        textObject(t, b.title);
        e.append(t);
      }
      e.append(image(b, false));
      return e;
    },
    rich_text(b) {
      const e = h('div', {className: 'bk-text', dataset: {blockId: b.block_id}});
      for (const el of b.elements || []) richElement(e, el);
      return e;
    },
    input(b, ctx) {
      return inputBlock(b, ctx);
    },
  };

  // image shows an image's alt text: the page loads nothing from outside.
  function image(el, small) {
    const alt = el.alt_text || 'image';
    return h('span', {className: 'bk-img' + (small ? '' : ' bk-big'), title: alt, role: 'img', 'aria-label': alt}, small ? '' : alt);
  }

  // element renders an interactive element; buttons click through the
  // emulator, other elements are shown but inert.
  function element(el, blockID, ctx) {
    if (el.type === 'button') return button(el, blockID, ctx);
    if (el.type === 'image') return image(el, true);
    const label = el.placeholder ? el.placeholder.text : el.type.replace(/_/g, ' ');
    return h('span', {className: 'bk-select', title: 'Not emulated: ' + el.type}, label + ' ▾');
  }

  function button(el, blockID, ctx) {
    const style = el.style === 'primary' ? ' btn-primary' : el.style === 'danger' ? ' btn-danger' : '';
    if (el.url && /^https?:/i.test(el.url)) return urlButton(el, blockID, ctx, style);
    const busy = ctx.busy;
    const b = h('button', {
      type: 'button',
      className: 'btn' + style + (ctx.surface === 'modal' ? ' btn-large' : ''),
      disabled: busy || (ctx.surface !== 'message' && ctx.surface !== 'home'),
      dataset: {actionId: el.action_id || '', blockId: blockID || '', style: el.style || 'default'},
    });
    textObject(b, el.text);
    if (ctx.surface === 'message') b.onclick = () => click(ctx, blockID, el);
    if (ctx.surface === 'home') b.onclick = () => homeClick(blockID, el);
    return b;
  }

  // urlButton is a button with a url, as Slack draws it: a link that opens
  // the page in a new tab, whatever the surface (a modal's too). Slack
  // still sends the click to the app, which acknowledges it; so does the
  // emulator on messages and the Home tab.
  function urlButton(el, blockID, ctx, style) {
    const a = h('a', {
      className: 'btn btn-url' + style + (ctx.surface === 'modal' ? ' btn-large' : ''),
      href: el.url, target: '_blank', rel: 'noopener noreferrer', title: el.url,
      dataset: {actionId: el.action_id || '', blockId: blockID || '', style: el.style || 'default'},
    });
    textObject(a, el.text);
    if (ctx.surface === 'message') a.onclick = () => { click(ctx, blockID, el); };
    if (ctx.surface === 'home') a.onclick = () => { homeClick(blockID, el); };
    return a;
  }

  function richElement(parent, el) {
    switch (el.type) {
      case 'rich_text_section': {
        const s = h('div');
        for (const c of el.elements || []) richInline(s, c);
        parent.append(s);
        break;
      }
      case 'rich_text_list': {
        const l = h(el.style === 'ordered' ? 'ol' : 'ul', {className: 'rt-list'});
        for (const item of el.elements || []) {
          const li = h('li');
          for (const c of item.elements || []) richInline(li, c);
          l.append(li);
        }
        parent.append(l);
        break;
      }
      case 'rich_text_preformatted': {
        const p = h('pre', {className: 'mk-pre'});
        p.textContent = (el.elements || []).map((c) => c.text || c.url || '').join('');
        parent.append(p);
        break;
      }
      case 'rich_text_quote': {
        const q = h('div', {className: 'mk-quote'});
        for (const c of el.elements || []) richInline(q, c);
        parent.append(q);
        break;
      }
      default:
        parent.append(h('span', {className: 'bk-unknown'}, `[${el.type}]`));
    }
  }

  function richInline(parent, c) {
    let e;
    switch (c.type) {
      case 'text': e = h('span'); text(e, c.text || ''); break;
      case 'link': e = /^(https?:|mailto:)/i.test(c.url || '') ? h('a', {className: 'mk-link', href: c.url, target: '_blank', rel: 'noopener noreferrer'}, c.text || c.url) : h('span', {}, c.text || c.url || ''); break;
      case 'user': e = h('span'); control(e, '@' + c.user_id); break;
      case 'channel': e = h('span'); control(e, '#' + c.channel_id); break;
      case 'usergroup': e = h('span'); control(e, '!subteam^' + c.usergroup_id); break;
      case 'broadcast': e = h('span', {className: 'mention self'}, '@' + c.range); break;
      case 'emoji': e = h('span'); text(e, c.unicode ? String.fromCodePoint(...c.unicode.split('-').map((x) => parseInt(x, 16))) : ':' + c.name + ':'); break;
      case 'date': e = h('span', {className: 'mk-date'}, slackDate(c.timestamp, c.format || '{date_short_pretty}')); break;
      default: e = h('span', {className: 'bk-unknown'}, `[${c.type}]`);
    }
    const st = c.style || {};
    if (st.code) e = h('code', {className: 'mk-code'}, e);
    if (st.bold) e = h('b', {}, e);
    if (st.italic) e = h('i', {}, e);
    if (st.strike) e = h('s', {}, e);
    parent.append(e);
  }

  // inputBlock renders a modal's input; its text is kept in modalValues
  // so redraws keep what was typed.
  function inputBlock(b, ctx) {
    const el = b.element || {};
    const errors = app.modalErrors[ctx.viewID] || {};
    const wrap = h('div', {className: 'input-block' + (errors[b.block_id] ? ' invalid' : ''), dataset: {blockId: b.block_id}});
    const label = h('label', {className: 'input-label', for: 'in-' + b.block_id});
    textObject(label, b.label);
    if (b.optional) label.append(h('span', {className: 'input-optional'}, ' (optional)'));
    wrap.append(label);
    if (['plain_text_input', 'email_text_input', 'url_text_input', 'number_input'].includes(el.type)) {
      const values = (app.modalValues[ctx.viewID] ||= {});
      const mine = (values[b.block_id] ||= {});
      if (!(el.action_id in mine)) mine[el.action_id] = el.initial_value || '';
      const multiline = el.type === 'plain_text_input' && el.multiline;
      const looksLikeJSON = multiline && /^\s*[[{]/.test(mine[el.action_id]);
      const field = h(multiline ? 'textarea' : 'input', {
        className: 'input-field' + (looksLikeJSON ? ' code' : ''),
        id: 'in-' + b.block_id,
        dataset: {actionId: el.action_id},
        placeholder: el.placeholder ? el.placeholder.text : '',
        oninput: (ev) => { mine[el.action_id] = ev.target.value; },
      });
      if (!multiline) field.type = el.type === 'number_input' ? 'number' : el.type === 'email_text_input' ? 'email' : el.type === 'url_text_input' ? 'url' : 'text';
      if (el.max_length) field.setAttribute('maxlength', el.max_length);
      field.value = mine[el.action_id];
      if (multiline) field.spellcheck = !looksLikeJSON;
      wrap.append(field);
    } else {
      wrap.append(element(el, b.block_id, ctx));
    }
    if (errors[b.block_id]) wrap.append(h('div', {className: 'input-error', role: 'alert'}, errors[b.block_id]));
    if (b.hint) {
      const hint = h('div', {className: 'input-hint'});
      textObject(hint, b.hint);
      wrap.append(hint);
    }
    return wrap;
  }

  // ---------------------------------------------------------------- actions

  async function click(ctx, blockID, el) {
    if (el.confirm && !(await confirmDialog(el.confirm))) return;
    const k = key(ctx.channel, ctx.ts);
    app.inFlight.add(k);
    render();
    try {
      await api.post('click', {user: app.user, channel: ctx.channel, ts: ctx.ts, action_id: el.action_id, block_id: blockID, value: el.value || ''});
    } finally {
      app.inFlight.delete(k);
      render();
    }
  }

  // HOME is the main pane's "channel" while it shows the app's Home tab.
  const HOME = 'home';

  // openHome tells slackbot the acting person opened the app's Home tab
  // (app_home_opened); it answers with views.publish, which the page shows.
  async function openHome() {
    await api.post('home/open', {user: app.user});
  }

  // homeClick clicks a button of the acting person's Home tab.
  async function homeClick(blockID, el) {
    if (el.confirm && !(await confirmDialog(el.confirm))) return;
    const k = 'home/' + app.user;
    app.inFlight.add(k);
    render();
    try {
      await api.post('home/click', {user: app.user, action_id: el.action_id, block_id: blockID, value: el.value || ''});
    } finally {
      app.inFlight.delete(k);
      render();
    }
  }

  // encode turns what a person typed into what Slack stores: &, < and >
  // escaped, @names and #channels as mentions.
  function encode(s) {
    s = s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
    s = s.replace(/(^|[\s(])@([\w.\-]+)/g, (m, pre, name) => {
      const n = name.toLowerCase();
      if (['here', 'channel', 'everyone'].includes(n)) return `${pre}<!${n}>`;
      const u = users().find((u) => [u.name, u.display_name, (u.real_name || '').split(' ')[0]].some((x) => x && x.toLowerCase() === n));
      if (u) return `${pre}<@${u.id}>`;
      const g = app.state.usergroups.find((g) => g.handle.toLowerCase() === n);
      if (g) return `${pre}<!subteam^${g.id}>`;
      return m;
    });
    s = s.replace(/(^|[\s(])#([\w\-]+)/g, (m, pre, name) => {
      const c = app.state.channels.find((c) => !c.is_im && c.name === name.toLowerCase());
      return c ? `${pre}<#${c.id}>` : m;
    });
    return s;
  }

  async function send(textarea, threadTS) {
    const raw = textarea.value;
    if (!raw.trim() || !app.state) return;
    const channel = threadTS ? app.thread.channel : app.channel;
    textarea.disabled = true;
    try {
      const res = await api.post('post', {user: app.user, channel, text: encode(raw), thread_ts: threadTS || ''});
      if (res.ts) {
        textarea.value = '';
        grow(textarea);
      }
      if (res.note) toast({title: res.note});
    } finally {
      textarea.disabled = false;
      textarea.focus();
    }
  }

  // ---------------------------------------------------------------- modals

  function confirmDialog(c) {
    return new Promise((resolve) => {
      const root = $('modal-root');
      const done = (ok) => { overlay.remove(); resolve(ok); };
      const title = h('h2', {className: 'modal-title'});
      textObject(title, c.title || {type: 'plain_text', text: 'Are you sure?'});
      const body = h('div', {className: 'modal-body bk-text'});
      textObject(body, c.text);
      const yes = h('button', {type: 'button', className: 'btn btn-large ' + (c.style === 'danger' ? 'btn-danger-filled' : 'btn-primary'), onclick: () => done(true)});
      textObject(yes, c.confirm || {type: 'plain_text', text: 'Yes'});
      const no = h('button', {type: 'button', className: 'btn btn-large', onclick: () => done(false)});
      textObject(no, c.deny || {type: 'plain_text', text: 'Cancel'});
      const overlay = h('div', {className: 'modal-overlay confirm'},
        h('div', {className: 'modal', role: 'alertdialog', 'aria-modal': 'true'},
          h('div', {className: 'modal-header'}, title),
          body,
          h('div', {className: 'modal-footer'}, no, yes)));
      root.append(overlay);
      yes.focus();
    });
  }

  // currentView is the modal the acting person sees: the top of the most
  // recent stack opened for them.
  function currentView() {
    if (!app.state) return null;
    const mine = app.state.views.filter((v) => !v.user || v.user === app.user);
    return mine.length ? mine[mine.length - 1] : null;
  }

  function renderModal() {
    const root = $('modal-root');
    const v = currentView();
    const k = v ? `${v.id}/${v.hash}/${app.user}/${JSON.stringify(app.modalErrors[v.id] || {})}/${app.submitting}` : '';
    if (k === app.modalKey) return;
    app.modalKey = k;
    for (const old of root.querySelectorAll('.modal-overlay:not(.confirm)')) old.remove();
    if (!v) return;
    const view = v.view;
    const depth = app.state.views.filter((o) => o.root_view_id === v.root_view_id).length;
    const title = h('h2', {className: 'modal-title', id: 'modal-title'});
    textObject(title, view.title);
    const close = () => closeView(v);
    const body = h('div', {className: 'modal-body'}, blocks(view.blocks, {surface: 'modal', viewID: v.id}));
    const footer = h('div', {className: 'modal-footer'});
    const cancel = h('button', {type: 'button', className: 'btn btn-large', onclick: close, dataset: {role: 'cancel'}});
    textObject(cancel, view.close || {type: 'plain_text', text: view.submit ? 'Cancel' : 'Close'});
    footer.append(cancel);
    if (view.submit) {
      const submit = h('button', {type: 'button', className: 'btn btn-large btn-primary' + (app.submitting ? ' busy' : ''), disabled: app.submitting, onclick: () => submitView(v), dataset: {role: 'submit'}});
      textObject(submit, view.submit);
      footer.append(submit);
    }
    const dialog = h('div', {className: 'modal', role: 'dialog', 'aria-modal': 'true', 'aria-labelledby': 'modal-title', dataset: {viewId: v.id, callbackId: view.callback_id || ''}},
      h('div', {className: 'modal-header'}, title, h('button', {type: 'button', className: 'icon-button', 'aria-label': 'Close', onclick: close}, '×')),
      depth > 1 ? h('div', {className: 'modal-stack'}, `View ${depth} of ${depth}`) : null,
      body, footer);
    root.prepend(h('div', {className: 'modal-overlay'}, dialog));
    const first = body.querySelector('textarea, input');
    if (first) first.focus();
  }

  async function submitView(v) {
    if (app.submitting) return;
    app.submitting = true;
    app.modalErrors[v.id] = {};
    renderModal();
    try {
      const res = await api.post('submit', {user: app.user, view_id: v.id, values: app.modalValues[v.id] || {}});
      if (res.errors) app.modalErrors[v.id] = res.errors;
    } finally {
      app.submitting = false;
      renderModal();
    }
  }

  async function closeView(v) {
    await api.post('close', {user: app.user, view_id: v.id});
  }

  // ---------------------------------------------------------------- toasts

  // toast shows a notice; one about a channel or a thread goes away when
  // the person opens it.
  function toast({title, detail, error, action, actionLabel, channel, thread}) {
    const box = $('toasts');
    const body = h('div', {className: 'toast-body'});
    const t = h('div', {className: 'toast-title'});
    text(t, title);
    body.append(t);
    if (detail) body.append(h('div', {className: 'toast-detail'}, detail));
    const el = h('div', {className: 'toast' + (error ? ' error' : ''), role: error ? 'alert' : 'status', dataset: {channel: channel || '', thread: thread || ''}}, body);
    if (action) body.append(h('button', {type: 'button', className: 'toast-link', onclick: () => { action(); el.remove(); }}, actionLabel || 'Open'));
    el.append(h('button', {type: 'button', className: 'toast-close', 'aria-label': 'Dismiss', onclick: () => el.remove()}, '×'));
    box.append(el);
    while (box.children.length > 4) box.firstChild.remove();
    if (!error) setTimeout(() => el.remove(), 9000);
  }

  // ---------------------------------------------------------------- navigation

  function dismiss(attr, value) {
    for (const t of document.querySelectorAll('.toast')) if (t.dataset[attr] === value) t.remove();
  }

  function openChannel(id) {
    app.channel = id;
    app.unread[id] = 0;
    dismiss('channel', id);
    localStorage.setItem('devui.channel', id);
    render(true);
    if (id === HOME) openHome();
  }

  function openThread(channel, ts) {
    app.thread = {channel, ts};
    dismiss('thread', key(channel, ts));
    render();
    const t = $('thread-composer');
    if (t) t.focus();
  }

  function setUser(id) {
    if (app.channel && app.channel[0] === 'D') app.channel = dmOf(id);
    app.user = id;
    localStorage.setItem('devui.user', id);
    app.modalKey = '';
    render(true);
    if (app.channel === HOME) openHome();
  }

  // ---------------------------------------------------------------- rendering

  // changed reports whether a part of the page must be redrawn: only when
  // what it shows changed, so nodes stay put under the pointer.
  const drawn = {};
  function changed(part, ...what) {
    const sig = JSON.stringify(what);
    if (drawn[part] === sig) return false;
    drawn[part] = sig;
    return true;
  }

  function render(jump) {
    if (!app.state) return;
    const s = app.state;
    if (!app.user || !userByID(app.user) || userByID(app.user).is_bot) {
      const requester = people().find((u) => role(u.id) === 'requester');
      app.user = (requester || people()[0] || {}).id || '';
    }
    if (!app.channel || (!channelByID(app.channel) && app.channel !== dmOf(app.user) && app.channel !== HOME)) {
      const general = s.channels.find((c) => c.name === 'general');
      app.channel = (general || s.channels.find((c) => !c.is_im) || {}).id || dmOf(app.user);
    }
    document.title = `${channelLabel(app.channel)} · ${s.team.name} · slackbot dev`;
    $('team-name').textContent = s.team.name;
    $('team-icon').textContent = (s.team.name || 'W')[0].toUpperCase();
    $('live').className = 'live' + (app.live ? ' on' : '');
    $('live').title = app.live ? 'Live: following the workspace' : 'Reconnecting…';
    $('search-text').textContent = `Local Slack emulator · ${s.team.name} · payloads signed and sent to slackbot`;
    renderUsers();
    renderSidebar();
    $('composer-form').hidden = app.channel === HOME;
    if (app.channel === HOME) renderHome();
    else renderChannel(jump);
    renderThread();
    renderModal();
  }

  function renderUsers() {
    if (!changed('users', app.user, people())) return;
    const box = $('users');
    box.replaceChildren(...people().map((u) => h('button', {
      type: 'button', className: 'acting-user', 'aria-pressed': String(u.id === app.user), dataset: {user: u.id},
      title: `Act as ${u.real_name || u.name} (${u.id})`, onclick: () => setUser(u.id),
    }, avatar(u.id), h('span', {className: 'acting-name'}, displayName(u.id), h('span', {className: 'acting-role'}, role(u.id))))));
  }

  function sidebarItem(id, prefix, label) {
    const n = app.unread[id] || 0;
    return h('li', {}, h('button', {
      type: 'button',
      className: 'sidebar-item' + (id === app.channel ? ' active' : '') + (n ? ' unread' : ''),
      dataset: {channel: id},
      onclick: () => openChannel(id),
    }, prefix, h('span', {className: 'label'}, label), n ? h('span', {className: 'badge', 'aria-label': `${n} new`}, String(n)) : null));
  }

  function renderSidebar() {
    if (!changed('sidebar', app.user, app.channel, app.unread, app.state.channels, app.state.bot_user_id)) return;
    const chans = app.state.channels.filter((c) => !c.is_im).slice().sort((a, b) => a.name.localeCompare(b.name));
    $('channels').replaceChildren(...chans.map((c) => sidebarItem(c.id, h('span', {className: 'prefix'}, c.is_private ? '🔒' : '#'), c.name)));
    const bot = app.state.bot_user_id;
    const dm = dmOf(app.user);
    const botAvatar = avatar(bot);
    $('dms').replaceChildren(sidebarItem(dm, botAvatar, displayName(bot)));
    $('apps').replaceChildren(sidebarItem(HOME, avatar(bot), displayName(bot) + ' · Home'));
  }

  // renderHome shows the app's Home tab as the acting person sees it: the
  // view slackbot last published for them, its buttons live.
  function renderHome() {
    const bot = app.state.bot_user_id;
    $('channel-title').replaceChildren(avatar(bot, 24), displayName(bot), h('span', {className: 'app-badge'}, 'APP'), h('span', {className: 'home-tab'}, 'Home'));
    $('channel-topic').textContent = 'The app\'s Home tab: what waits for you, your requests, your grants.';
    const home = (app.state.homes || {})[app.user];
    const busy = app.inFlight.has('home/' + app.user);
    if (!changed('channel', HOME, app.user, home, busy, app.state.users, app.state.channels, app.state.usergroups)) return;
    const body = home
      ? h('div', {className: 'home', dataset: {home: app.user}}, blocks(home.view.blocks, {surface: 'home', busy}))
      : h('div', {className: 'intro'}, h('p', {}, 'Opening the Home tab…'));
    $('messages').replaceChildren(body);
  }

  // visible lists what the acting person sees in a channel: top-level
  // messages and their own ephemeral messages, in order.
  function visible(channel, threadTS) {
    const msgs = (app.state.messages[channel] || []).filter((m) => (threadTS ? m.thread_ts === threadTS || m.ts === threadTS : !m.thread_ts || m.thread_ts === m.ts));
    const eph = (app.state.ephemerals[app.user] || []).filter((e) => e.channel === channel && (threadTS ? e.thread_ts === threadTS : !e.thread_ts))
      // An ephemeral message comes from the app; its user is who sees it.
      .map((e) => ({...e, user: app.state.bot_user_id, shownTo: e.user, ephemeral: true}));
    return msgs.concat(eph).sort((a, b) => parseFloat(a.ts) - parseFloat(b.ts));
  }

  function renderChannel(jump) {
    const id = app.channel;
    const c = channelByID(id);
    const isDM = id[0] === 'D';
    const title = $('channel-title');
    if (isDM) title.replaceChildren(avatar(app.state.bot_user_id, 24), displayName(app.state.bot_user_id), h('span', {className: 'app-badge'}, 'APP'));
    else title.replaceChildren(h('span', {className: 'prefix'}, c && c.is_private ? '🔒' : '#'), c ? c.name : id);
    $('channel-topic').textContent = isDM ? 'Direct messages with the app: slackbot hears every message here.' : 'slackbot hears messages that @mention it.';
    $('composer').placeholder = isDM ? `Message ${displayName(app.state.bot_user_id)}` : `Message #${c ? c.name : id}`;
    $('composer-who').textContent = `Posting as ${displayName(app.user)} · Enter to send, Shift+Enter for a new line`;

    const box = $('messages');
    const list = visible(id);
    if (!changed('channel', id, app.user, list, [...app.inFlight], app.state.users, app.state.channels, app.state.usergroups) && !jump) return;
    const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 60;
    const scroll = box.scrollTop;
    const nodes = [];
    nodes.push(h('div', {className: 'intro'},
      h('h2', {}, isDM ? displayName(app.state.bot_user_id) : `#${c ? c.name : id}`),
      h('p', {}, isDM
        ? 'This is your direct message with the app. Ask it something: it runs the agent and answers in a thread.'
        : `This is the very beginning of the #${c ? c.name : id} channel. Mention @${displayName(app.state.bot_user_id)} to start a run.`)));
    let prev = null;
    let day = '';
    for (const m of list) {
      const d = tsDate(m.ts);
      const dayKey = d.toDateString();
      if (dayKey !== day) {
        day = dayKey;
        nodes.push(h('div', {className: 'day'}, h('span', {}, slackDate(d.getTime() / 1000, '{day_divider_pretty}'))));
        prev = null;
      }
      nodes.push(message(m, {channel: id, cont: continues(prev, m), inThread: false}));
      prev = m;
    }
    box.replaceChildren(...nodes);
    box.scrollTop = jump || atBottom ? box.scrollHeight : scroll;
    renderHints(isDM);
  }

  // continues reports whether m is drawn under prev without its own name
  // and avatar, as Slack groups a person's messages within five minutes.
  // Block Kit messages always get their own header: each card stands alone.
  function continues(prev, m) {
    return !!prev && !prev.ephemeral && !m.ephemeral && prev.user === m.user && !prev.reply_count &&
      !(m.blocks && m.blocks.length) && parseFloat(m.ts) - parseFloat(prev.ts) < 300;
  }

  function renderHints(isDM) {
    const mention = isDM ? '' : `@${(userByID(app.state.bot_user_id) || {}).name || 'slackbot'} `;
    // The demo model's prompts (agentrunner/demotools).
    const hints = ['delete customer C-42', 'refund order A-1002 150', 'delete the file temp.txt', 'look up order A-1001'];
    $('hints').replaceChildren(h('span', {className: 'hints-label'}, 'Try'), ...hints.map((t) => h('button', {
      type: 'button', className: 'hint', title: mention + t, onclick: () => { const c = $('composer'); c.value = mention + t; grow(c); c.focus(); },
    }, t)));
  }

  // message renders one message: avatar, name, time, content, "(edited)",
  // and under a thread's parent, its replies' summary.
  function message(m, {channel, cont, inThread}) {
    const k = key(channel, m.ts);
    const u = userByID(m.user);
    const isBot = !!m.bot_id || (u && u.is_bot);
    const d = tsDate(m.ts);
    const cls = ['msg'];
    if (cont) cls.push('cont');
    if (m.ephemeral) cls.push('ephemeral');
    const since = app.flash.get(k);
    const flashing = since !== undefined && Date.now() - since < FLASH_MS;
    if (flashing) cls.push('flash');
    const main = h('div', {className: 'msg-main'});
    if (!cont) {
      main.append(h('div', {className: 'msg-head'},
        h('span', {className: 'msg-name'}, displayName(m.user)),
        isBot ? h('span', {className: 'app-badge'}, 'APP') : null,
        h('time', {className: 'msg-time', datetime: d.toISOString(), title: d.toString()}, clock(d))));
    }
    const ctx = {surface: 'message', channel, ts: m.ts, busy: app.inFlight.has(k)};
    const content = h('div', {className: 'msg-content'});
    if (m.blocks && m.blocks.length) content.append(blocks(m.blocks, ctx));
    else {
      const t = h('div', {className: 'msg-text'});
      mrkdwn(t, m.text || '');
      content.append(t);
    }
    if (m.edited) content.append(h('span', {className: 'edited', title: 'Edited ' + new Date(m.edited).toString()}, '(edited)'));
    main.append(content);
    if (!inThread && m.reply_count) {
      const who = (m.reply_users || []).slice(0, 3).map((id) => avatar(id));
      const latest = m.latest_reply ? tsDate(m.latest_reply) : null;
      main.append(h('button', {type: 'button', className: 'thread-summary', dataset: {ts: m.ts}, onclick: () => openThread(channel, m.ts)},
        ...who,
        h('span', {className: 'count'}, `${m.reply_count} ${m.reply_count === 1 ? 'reply' : 'replies'}`),
        latest ? h('span', {className: 'last'}, `Last reply ${slackDate(latest.getTime() / 1000, '{date_pretty}').replace(/^[A-Z]/, (c) => c.toLowerCase())} at ${clock(latest)}`) : null));
    }
    const gutter = h('div', {className: 'gutter'}, cont ? h('span', {className: 'hover-time'}, clock(d).replace(/ [AP]M$/, '')) : avatar(m.user));
    const e = h('div', {className: cls.join(' '), dataset: {ts: m.ts, channel, user: m.user || ''}},
      m.ephemeral ? h('div', {className: 'only-you'}, h('img', {className: 'eye', src: EYE, alt: ''}), 'Only visible to you') : null,
      gutter, main);
    if (flashing) {
      // A redraw continues the highlight where it was.
      e.style.animationDelay = `${since - Date.now()}ms`;
      e.addEventListener('animationend', () => { e.classList.remove('flash'); app.flash.delete(k); });
    }
    if (!inThread && !m.ephemeral) {
      const reply = h('button', {type: 'button', title: 'Reply in thread', onclick: () => openThread(channel, m.ts)});
      text(reply, '💬 Reply in thread');
      e.append(h('div', {className: 'msg-actions'}, reply));
    }
    return e;
  }

  function renderThread() {
    const pane = $('thread');
    const ws = $('workspace');
    const t = app.thread;
    const parent = t && (app.state.messages[t.channel] || []).find((m) => m.ts === t.ts);
    if (!parent) {
      pane.hidden = true;
      ws.classList.remove('with-thread');
      app.thread = null;
      return;
    }
    pane.hidden = false;
    ws.classList.add('with-thread');
    pane.dataset.ts = t.ts;
    pane.dataset.channel = t.channel;
    $('thread-channel').textContent = channelLabel(t.channel);
    // A thread is one conversation with slackbot: in a channel a reply
    // that mentions it continues the conversation, in a DM any reply does.
    const hint = t.channel[0] === 'D' ? 'slackbot answers in this conversation' : `@${displayName(app.state.bot_user_id)} continues this conversation`;
    $('thread-who').textContent = `Replying as ${displayName(app.user)} · ${hint}`;
    const box = $('thread-messages');
    const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 60;
    const scroll = box.scrollTop;
    const all = visible(t.channel, t.ts);
    if (!changed('thread', t, app.user, parent, all, [...app.inFlight], app.state.users) ) return;
    const replies = all.filter((m) => m.ts !== t.ts);
    const nodes = [message(parent, {channel: t.channel, cont: false, inThread: true})];
    if (replies.length) nodes.push(h('div', {className: 'replies-divider'}, `${replies.length} ${replies.length === 1 ? 'reply' : 'replies'}`));
    let prev = null;
    for (const m of replies) {
      nodes.push(message(m, {channel: t.channel, cont: continues(prev, m), inThread: true}));
      prev = m;
    }
    box.replaceChildren(...nodes);
    box.scrollTop = atBottom ? box.scrollHeight : scroll;
  }

  // ---------------------------------------------------------------- news

  // notice compares a new state with the last one: new messages in other
  // channels mark them unread, approval cards and thread answers elsewhere
  // get a toast, and new or changed messages flash.
  function notice(prev, next) {
    if (!prev) return;
    const old = new Map();
    for (const [ch, msgs] of Object.entries(prev.messages)) for (const m of msgs) old.set(key(ch, m.ts), m);
    const now = Date.now();
    for (const [ch, msgs] of Object.entries(next.messages)) {
      for (const m of msgs) {
        const k = key(ch, m.ts);
        const before = old.get(k);
        if (before) {
          if (before.edited !== m.edited) app.flash.set(k, now);
          continue;
        }
        app.flash.set(k, now);
        const reply = m.thread_ts && m.thread_ts !== m.ts;
        const here = ch === app.channel;
        if (!reply && !here && !(ch[0] === 'D' && ch !== dmOf(app.user))) app.unread[ch] = (app.unread[ch] || 0) + 1;
        if (m.user === app.user) continue;
        const card = (m.blocks || []).some((b) => b.type === 'actions');
        if (card && !here) {
          toast({title: `New approval request in ${channelLabel(ch)}`, action: () => openChannel(ch), actionLabel: `Open ${channelLabel(ch)}`, channel: ch});
        } else if (reply && !(app.thread && app.thread.channel === ch && app.thread.ts === m.thread_ts)) {
          toast({title: `${displayName(m.user)} replied in a thread in ${channelLabel(ch)}`, action: () => { openChannel(ch); openThread(ch, m.thread_ts); }, actionLabel: 'View thread', thread: key(ch, m.thread_ts)});
        }
      }
    }
    const seen = new Set((prev.ephemerals[app.user] || []).map((e) => key(e.channel, e.ts)));
    for (const e of next.ephemerals[app.user] || []) {
      const k = key(e.channel, e.ts);
      if (seen.has(k)) continue;
      app.flash.set(k, now);
      if (e.channel !== app.channel) {
        toast({title: `Only visible to you in ${channelLabel(e.channel)}: ${unescape(e.text).replace(/<[^>]*>/g, '…').slice(0, 140)}`, action: () => openChannel(e.channel), actionLabel: `Open ${channelLabel(e.channel)}`, channel: e.channel});
      }
    }
  }

  // ---------------------------------------------------------------- live updates

  let loading = null;
  let again = false;

  async function load() {
    if (loading) { again = true; return loading; }
    loading = (async () => {
      do {
        again = false;
        try {
          const next = await api.get('state');
          const prev = app.state;
          notice(prev, next);
          app.state = next;
          for (const id of Object.keys(app.modalValues)) if (!next.views.some((v) => v.id === id)) { delete app.modalValues[id]; delete app.modalErrors[id]; }
          render(!prev);
          if (!prev && app.channel === HOME) openHome();
        } catch (err) {
          toast({error: true, title: 'Could not load the workspace', detail: String(err)});
        }
      } while (again);
      loading = null;
    })();
    return loading;
  }

  function connect() {
    const es = new EventSource('changes');
    es.addEventListener('ready', () => { app.live = true; load(); });
    es.addEventListener('change', () => load());
    es.onerror = () => { app.live = false; if (app.state) render(); };
  }

  // ---------------------------------------------------------------- composer

  function grow(t) {
    t.style.height = 'auto';
    t.style.height = Math.min(t.scrollHeight, 200) + 'px';
  }

  function composer(form, textarea, threadTS) {
    textarea.addEventListener('input', () => grow(textarea));
    textarea.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        send(textarea, threadTS());
      }
    });
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      send(textarea, threadTS());
    });
  }

  // moveClock moves slackbot's clock ten minutes forward: what is due by
  // then (reminders, escalations, expiry) happens now.
  async function moveClock() {
    const res = await api.post('clock', {advance: '10m'});
    if (!res.ok) return;
    const badge = $('clock-offset');
    badge.hidden = false;
    badge.textContent = `slackbot's clock: +${res.minutes} min`;
    toast({title: `slackbot's clock is now ${res.minutes} minutes ahead`, detail: 'Reminders, escalations and expiries due by then happen now.'});
  }

  document.addEventListener('DOMContentLoaded', () => {
    composer($('composer-form'), $('composer'), () => '');
    composer($('thread-form'), $('thread-composer'), () => (app.thread ? app.thread.ts : ''));
    $('thread-close').onclick = () => { app.thread = null; render(); };
    $('clock-forward').onclick = moveClock;
    document.addEventListener('keydown', (ev) => {
      if (ev.key !== 'Escape') return;
      const v = currentView();
      if (v && !document.querySelector('.modal-overlay.confirm')) closeView(v);
    });
    const c = $('composer');
    c.value = '@slackbot delete customer a';
    grow(c);
    connect();
  });
})();
