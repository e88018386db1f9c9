// A local SMTP server for the devnet (smtp-server and mailparser from npm):
// it accepts every message, prints each sign-in code it sees, and appends
// every message to a JSON-lines file, so that tests and the README's first
// command can sign in to the dashboard.
//
//   node devnet/mail/sink.mjs --port 2525 --out .stablerail/devnet/mail.jsonl
import fs from "node:fs";
import { SMTPServer } from "smtp-server";
import { simpleParser } from "mailparser";

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const port = Number(arg("port", "2525"));
const out = arg("out", "mail.jsonl");
const quiet = process.argv.includes("--quiet");

const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ["STARTTLS"],
  logger: false,
  onData(stream, session, callback) {
    simpleParser(stream)
      .then((mail) => {
        const to = session.envelope.rcptTo.map((r) => r.address.toLowerCase());
        const code = (mail.text || "").match(/\b(\d{6})\b/)?.[1] ?? null;
        const record = { at: new Date().toISOString(), from: session.envelope.mailFrom?.address ?? null, to, subject: mail.subject ?? "", text: mail.text ?? "", code };
        fs.appendFileSync(out, JSON.stringify(record) + "\n");
        if (!quiet) console.log(`[mail] to ${to.join(", ")}: ${code ? `sign-in code ${code}` : mail.subject}`);
        callback();
      })
      .catch(callback);
  },
});
server.on("error", (e) => console.error(`[mail] ${e.message}`));
server.listen(port, "127.0.0.1", () => {
  if (!quiet) console.log(`[mail] SMTP sink on 127.0.0.1:${port}, messages in ${out}`);
});
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => server.close(() => process.exit(0)));
