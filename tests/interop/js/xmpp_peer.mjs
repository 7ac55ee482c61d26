// A plain XMPP peer written with xmpp.js (@xmpp/client, from npm): it logs in, sends
// JSON requests to the base memory agent as chat messages (request id in <thread>),
// asks that agent's full JID for disco#info, its ad-hoc commands and a ping, and prints
// what came back as one JSON object. Used by tests/interop/test_xmppjs.py.
//
//   node peer.mjs PORT USERNAME PASSWORD
import { client, xml } from "@xmpp/client";

const [port, username, password] = process.argv.slice(2);
const MEMORY = "base-memory@localhost";
const xmpp = client({
  service: `xmpp://127.0.0.1:${port}`,
  domain: "localhost",
  resource: "xmppjs",
  username,
  password,
});
const waiting = new Map();
const result = { features: [], commands: [], answers: {} };

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
    const agent = found.attrs.from;
    result.agent = agent;
    const info = await xmpp.iqCaller.request(
      xml("iq", { type: "get", to: agent }, xml("query", "http://jabber.org/protocol/disco#info")),
    );
    result.features = info.getChild("query").getChildren("feature").map((f) => f.attrs.var);
    const items = await xmpp.iqCaller.request(
      xml("iq", { type: "get", to: agent },
        xml("query", { xmlns: "http://jabber.org/protocol/disco#items",
          node: "http://jabber.org/protocol/commands" })),
    );
    result.commands = items.getChild("query").getChildren("item").map((i) => i.attrs.node);
    const pong = await xmpp.iqCaller.request(
      xml("iq", { type: "get", to: agent }, xml("ping", "urn:xmpp:ping")),
    );
    result.ping = pong.attrs.type;
    await finish();
  } catch (error) {
    await finish(error);
  }
});

setTimeout(() => finish(new Error("no answer within 60 s")), 60000);
xmpp.start().catch((error) => finish(error));
