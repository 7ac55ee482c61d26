// A plain XMPP peer written with xmpp.js (@xmpp/client, from npm): it logs in, sends
// JSON requests to the base memory agent as chat messages (request id in <thread>),
// asks that agent's full JID for disco#info, its ad-hoc commands, its software version
// and a ping, runs each ad-hoc command (XEP-0050: execute, then submit the form it
// answers), and prints what came back as one JSON object. Used by
// tests/interop/test_xmppjs.py.
//
//   node peer.mjs PORT USERNAME PASSWORD
import { client, xml } from "@xmpp/client";

const [port, username, password] = process.argv.slice(2);
const MEMORY = "base-memory@localhost";
const COMMANDS = "http://jabber.org/protocol/commands";
const DATA = "jabber:x:data";
const xmpp = client({
  service: `xmpp://127.0.0.1:${port}`,
  domain: "localhost",
  resource: "xmppjs",
  username,
  password,
});
const waiting = new Map();
const result = { features: [], commands: [], answers: {}, ran: {} };

xmpp.on("error", (error) => finish(error));
xmpp.on("stanza", (stanza) => {
  if (!stanza.is("message")) return;
  const thread = stanza.getChildText("thread");
  const done = waiting.get(thread);
  if (done) {
    waiting.delete(thread);
    done(stanza);
  }
});

function ask(thread, op) {
  return new Promise((resolve) => {
    waiting.set(thread, resolve);
    xmpp.send(
      xml("message", { to: MEMORY, type: "chat" }, xml("body", {}, JSON.stringify(op)),
        xml("thread", {}, thread)),
    );
  });
}

function values(parent) {
  const read = {};
  for (const field of parent.getChildren("field")) read[field.attrs.var] = field.getChildText("value");
  return read;
}

// A data form as {title, fields: {var: value}, items: [{var: value}]}.
function form(x) {
  if (!x) return null;
  return {
    title: x.getChildText("title"),
    fields: values(x),
    items: x.getChildren("item").map(values),
  };
}

// Runs an ad-hoc command at `agent`: execute, then (when it answers a form) submit
// `filled` to complete it. Returns the fields it asked for (null: none) and {status,
// form}, or {error, text} for an XMPP error.
async function run(agent, node, filled) {
  let asked = null;
  try {
    const first = await xmpp.iqCaller.request(
      xml("iq", { type: "set", to: agent }, xml("command", { xmlns: COMMANDS, node, action: "execute" })),
    );
    let command = first.getChild("command", COMMANDS);
    if (command.attrs.status === "executing") {
      asked = Object.keys(form(command.getChild("x", DATA)).fields);
      const fields = Object.entries(filled).map(([name, value]) =>
        xml("field", { var: name }, xml("value", {}, value)));
      const submitted = await xmpp.iqCaller.request(
        xml("iq", { type: "set", to: agent },
          xml("command", { xmlns: COMMANDS, node, sessionid: command.attrs.sessionid, action: "complete" },
            xml("x", { xmlns: DATA, type: "submit" }, ...fields))),
      );
      command = submitted.getChild("command", COMMANDS);
    }
    return { asked, status: command.attrs.status,
      form: form(command.getChild("x", DATA)) };
  } catch (error) {
    return { asked, error: error.condition ?? String(error),
      text: error.text ?? null };
  }
}

async function finish(error) {
  if (error) result.error = String(error);
  process.stdout.write(JSON.stringify(result) + "\n");
  try {
    await xmpp.stop();
  } finally {
    process.exit(error ? 1 : 0);
  }
}

xmpp.on("online", async (address) => {
  try {
    result.jid = address.toString();
    await xmpp.send(xml("presence"));
    const stored = await ask("store-1", {
      op: "store_memory", category: "fact", content: "xmpp.js peers are served",
    });
    result.answers.store = { type: stored.attrs.type, body: stored.getChildText("body") };
    const found = await ask("search-1", { op: "search_memories", query: "xmpp.js peers" });
    result.answers.search = { type: found.attrs.type, body: found.getChildText("body") };
    const unknown = await ask("unknown-1", { op: "serch_memories", query: "xmpp.js" });
    result.answers.unknown = { type: unknown.attrs.type, body: unknown.getChildText("body") };
    const space = await ask("space-1", { op: "create_space", name: "xmppjs-team", governed: true });
    result.answers.space = { type: space.attrs.type, body: space.getChildText("body") };
    const agent = found.attrs.from;
    result.agent = agent;
    const info = await xmpp.iqCaller.request(
      xml("iq", { type: "get", to: agent }, xml("query", "http://jabber.org/protocol/disco#info")),
    );
    result.features = info.getChild("query").getChildren("feature").map((f) => f.attrs.var);
    const items = await xmpp.iqCaller.request(
      xml("iq", { type: "get", to: agent },
        xml("query", { xmlns: "http://jabber.org/protocol/disco#items", node: COMMANDS })),
    );
    result.commands = items.getChild("query").getChildren("item").map((i) => i.attrs.node);
    const pong = await xmpp.iqCaller.request(
      xml("iq", { type: "get", to: agent }, xml("ping", "urn:xmpp:ping")),
    );
    result.ping = pong.attrs.type;
    const software = await xmpp.iqCaller.request(
      xml("iq", { type: "get", to: agent }, xml("query", "jabber:iq:version")),
    );
    const version = software.getChild("query", "jabber:iq:version");
    result.version = { name: version.getChildText("name"), version: version.getChildText("version") };
    const filled = {
      search: { query: "xmpp.js peers" },
      store: { category: "preference", content: "xmpp.js users like forms" },
      recent: { limit: "5" },
      stats: {},
      spaces: {},
      grant: { space: "xmppjs-team", member: "someone@localhost", role: "writer" },
      proposals: { space: "xmppjs-team" },
      decide: { space: "xmppjs-team", proposal: "no-such-proposal", decision: "approve" },
    };
    for (const node of result.commands) result.ran[node] = await run(agent, node, filled[node] ?? {});
    result.ran["search-without-query"] = await run(agent, "search", {});
    await finish();
  } catch (error) {
    await finish(error);
  }
});

setTimeout(() => finish(new Error("no answer within 60 s")), 60000);
xmpp.start().catch((error) => finish(error));
