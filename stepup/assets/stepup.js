// slackbot's step-up and passkey pages: runs the WebAuthn ceremony the
// server described in #page's data-options and posts the browser's answer
// back. The server checks everything; this only carries bytes.
"use strict";
(function () {
  const page = document.getElementById("page");
  const form = document.getElementById("ceremony-form");
  const button = document.getElementById("go");
  const message = document.getElementById("message");
  if (!page || !form) return;
  let held = null; // an existing passkey's assertion, until posted

  const b64u = {
    decode(s) {
      const b = atob(s.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(s.length / 4) * 4, "="));
      return Uint8Array.from(b, (c) => c.charCodeAt(0)).buffer;
    },
    encode(buf) {
      let s = "";
      for (const c of new Uint8Array(buf)) s += String.fromCharCode(c);
      return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    },
  };

  function show(text, ok) {
    message.textContent = text;
    message.className = "message " + (ok ? "ok" : "refused");
    message.hidden = false;
  }

  function creationOptions(o) {
    const pk = o.publicKey;
    pk.challenge = b64u.decode(pk.challenge);
    pk.user.id = b64u.decode(pk.user.id);
    (pk.excludeCredentials || []).forEach((c) => (c.id = b64u.decode(c.id)));
    return { publicKey: pk };
  }

  function requestOptions(o) {
    const pk = o.publicKey;
    pk.challenge = b64u.decode(pk.challenge);
    (pk.allowCredentials || []).forEach((c) => (c.id = b64u.decode(c.id)));
    return { publicKey: pk };
  }

  function credentialJSON(cred) {
    const r = cred.response;
    const out = { id: cred.id, rawId: b64u.encode(cred.rawId), type: cred.type, clientExtensionResults: cred.getClientExtensionResults(), response: { clientDataJSON: b64u.encode(r.clientDataJSON) } };
    if (r.attestationObject) {
      out.response.attestationObject = b64u.encode(r.attestationObject);
      if (r.getTransports) out.response.transports = r.getTransports();
    } else {
      out.response.authenticatorData = b64u.encode(r.authenticatorData);
      out.response.signature = b64u.encode(r.signature);
      if (r.userHandle) out.response.userHandle = b64u.encode(r.userHandle);
    }
    if (cred.authenticatorAttachment) out.authenticatorAttachment = cred.authenticatorAttachment;
    return out;
  }

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (!window.PublicKeyCredential) {
      show("This browser cannot use passkeys. Open the link in a browser that can (a current Chrome, Safari, Firefox or Edge).", false);
      return;
    }
    button.disabled = true;
    try {
      const body = {};
      // A person who has a passkey already proves it before another
      // credential is added: get() over data-assert, then the ceremony,
      // on this one click. The assertion is kept, so that should the
      // browser refuse the second prompt, the next click runs only it.
      if (page.dataset.assert) {
        if (!held) held = credentialJSON(await navigator.credentials.get(requestOptions(JSON.parse(page.dataset.assert))));
        body.assertion = held;
      }
      if (page.dataset.options) {
        const options = JSON.parse(page.dataset.options);
        const create = page.dataset.ceremony === "create";
        const cred = create
          ? await navigator.credentials.create(creationOptions(options))
          : await navigator.credentials.get(requestOptions(options));
        body.credential = credentialJSON(cred);
      }
      const name = document.getElementById("name");
      if (name) body.name = name.value;
      const code = document.getElementById("code");
      if (code && form.contains(code)) body.code = code.value;
      const res = await fetch(page.dataset.action, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body), credentials: "same-origin" });
      const answer = await res.json();
      show(answer.message, answer.ok);
      held = null;
      if (answer.ok) form.hidden = true;
      else button.disabled = false;
    } catch (e) {
      const cancelled = e && e.name === "NotAllowedError";
      show(cancelled ? "The passkey prompt was closed or timed out. Nothing changed; you can try again." : "Your browser could not use a passkey (" + (e && e.name ? e.name : "error") + "). Nothing changed.", false);
      button.disabled = false;
    }
  });
})();
