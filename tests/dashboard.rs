//! The dashboard (`/dashboard`): a new user's whole journey in Debian's
//! Chromium (devnet/clients/dashboard.mjs, puppeteer-core and axe-core) on a
//! devnet, with balances read on chain; and its defences, tried over the
//! router on both engines: CSRF on every form, the cookie's flags, code
//! tries and lockout, no enumeration, the agent limit under concurrency,
//! and one account trying every page and form with another's ids.

use crate::common;
use crate::on_both_engines;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use axum::body::Body;
use axum::http::{header, Request};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

use common::app::{App, Backend, MERCHANT};
use common::devnet::{devnet_script, Devnet};
use common::process::{free_port, serve, Reaped};

on_both_engines!(forms_sessions_and_codes, one_account_never_sees_another);

/// The devnet's SMTP sink (smtp-server), its messages in `dir/mail.jsonl`.
fn mail_sink(dir: &Path) -> (Reaped, u16, PathBuf) {
    let port = free_port();
    let log = dir.join("mail.jsonl");
    let child = Command::new("node")
        .arg(common::devnet::devnet_dir().join("mail/sink.mjs"))
        .args(["--port", &port.to_string(), "--out", &log.display().to_string(), "--quiet"])
        .spawn()
        .unwrap();
    common::wait_for_port(port);
    (Reaped(child), port, log)
}

fn dashboard_config(smtp_port: u16, extra: &str) -> String {
    format!(
        "[dashboard]\nenabled = true\nsignup = \"open\"\nsmtp_url = \"smtp://127.0.0.1:{smtp_port}\"\nsign_in_requests_per_minute = 10000\n{extra}"
    )
}

/// Every mail the sink holds for `email`.
fn mails(log: &Path, email: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|m| m["to"].as_array().unwrap().iter().any(|t| t == email))
        .collect()
}

async fn wait_mails(log: &Path, email: &str, n: usize) -> Vec<Value> {
    for _ in 0..200 {
        let m = mails(log, email);
        if m.len() >= n {
            return m;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("{email} did not get {n} mails");
}

/// A browser without JavaScript: a cookie jar and a Host, over the router.
struct Visitor {
    host: &'static str,
    cookies: BTreeMap<String, String>,
}

struct Answer {
    status: u16,
    set_cookies: Vec<String>,
    location: Option<String>,
    body: String,
}

impl Answer {
    /// The first CSRF token in the page.
    fn csrf(&self) -> String {
        let at = self.body.find("name=\"csrf\" value=\"").expect("a form with a CSRF token") + 19;
        self.body[at..].split('"').next().unwrap().to_string()
    }
}

impl Visitor {
    fn new(host: &'static str) -> Visitor {
        Visitor { host, cookies: BTreeMap::new() }
    }

    async fn send(&mut self, app: &App, method: &str, path: &str, form: Option<&[(&str, &str)]>, media: Option<&str>) -> Answer {
        let mut req = Request::builder().method(method).uri(path).header(header::HOST, self.host);
        if !self.cookies.is_empty() {
            req = req.header(header::COOKIE, self.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; "));
        }
        let body = match form {
            Some(pairs) => {
                req = req.header(header::CONTENT_TYPE, media.unwrap_or("application/x-www-form-urlencoded"));
                Body::from(serde_urlencoded::to_string(pairs).unwrap())
            }
            None => Body::empty(),
        };
        let resp = stablerail::api::router(app.state.clone()).oneshot(req.body(body).unwrap()).await.unwrap();
        let set_cookies: Vec<String> = resp.headers().get_all(header::SET_COOKIE).iter().map(|v| v.to_str().unwrap().to_string()).collect();
        for c in &set_cookies {
            let (pair, _) = c.split_once(';').unwrap_or((c, ""));
            let (k, v) = pair.split_once('=').unwrap();
            if v.is_empty() || c.contains("Max-Age=0") {
                self.cookies.remove(k);
            } else {
                self.cookies.insert(k.to_string(), v.to_string());
            }
        }
        let status = resp.status().as_u16();
        let location = resp.headers().get(header::LOCATION).map(|v| v.to_str().unwrap().to_string());
        let body = String::from_utf8(resp.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
        Answer { status, set_cookies, location, body }
    }

    async fn get(&mut self, app: &App, path: &str) -> Answer {
        self.send(app, "GET", path, None, None).await
    }

    async fn post(&mut self, app: &App, path: &str, form: &[(&str, &str)]) -> Answer {
        self.send(app, "POST", path, Some(form), None).await
    }

    /// Ask for a code: the page's answer.
    async fn ask_code(&mut self, app: &App, email: &str) -> Answer {
        let token = self.get(app, "/dashboard/sign-in").await.csrf();
        self.post(app, "/dashboard/sign-in", &[("csrf", &token), ("email", email)]).await
    }

    async fn try_code(&mut self, app: &App, email: &str, code: &str) -> Answer {
        let token = self.get(app, "/dashboard/sign-in").await.csrf();
        self.post(app, "/dashboard/sign-in/code", &[("csrf", &token), ("email", email), ("code", code)]).await
    }

    /// Sign in with the code the sink received; the agents page's CSRF token.
    async fn sign_in(&mut self, app: &App, log: &Path, email: &str) -> String {
        let before = mails(log, email).len();
        assert_eq!(self.ask_code(app, email).await.status, 200);
        let code = wait_mails(log, email, before + 1).await.last().unwrap()["code"].as_str().unwrap().to_string();
        let a = self.try_code(app, email, &code).await;
        assert_eq!((a.status, a.location.as_deref()), (303, Some("/dashboard/agents")), "{}", a.body);
        self.get(app, "/dashboard/agents").await.csrf()
    }

    /// Create an agent: its id and its key pair's Bearer header.
    async fn create_agent(&mut self, app: &App, csrf: &str, name: &str) -> (String, String) {
        let a = self.post(app, "/dashboard/agents", &[("csrf", csrf), ("name", name)]).await;
        assert_eq!(a.status, 200, "{}", a.body);
        let value = |id: &str| {
            let at = a.body.find(&format!("id=\"{id}\"")).unwrap();
            let v = a.body[at..].split("value=\"").nth(1).unwrap();
            v.split('"').next().unwrap().to_string()
        };
        let bearer = value("bearer").replace("Bearer ", "");
        let id = a.body.split("href=\"/dashboard/agents/").nth(1).unwrap().split('"').next().unwrap().to_string();
        (id, format!("Bearer {bearer}"))
    }
}

fn cookie_named<'a>(a: &'a Answer, name: &str) -> &'a str {
    a.set_cookies.iter().find(|c| c.starts_with(&format!("{name}="))).unwrap_or_else(|| panic!("no {name} cookie in {:?}", a.set_cookies))
}

async fn app_with_mail(backend: Backend, extra: &str) -> (App, Reaped, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let (sink, port, log) = mail_sink(dir.path());
    let app = App::start(backend, &dashboard_config(port, extra)).await;
    std::mem::forget(dir); // the sink's log lives as long as the test
    (app, sink, log)
}

async fn forms_sessions_and_codes(backend: Backend) {
    let (app, _sink, log) = app_with_mail(backend, "").await;

    // The cookie's flags: __Host- and Secure on a public host; on loopback
    // over plain HTTP the same without Secure (a __Host- cookie must be).
    let mut public = Visitor::new("dash.example.com");
    let page = public.get(&app, "/dashboard/sign-in").await;
    let c = cookie_named(&page, "__Host-sr_signin");
    for flag in ["HttpOnly", "SameSite=Strict", "Secure", "Path=/"] {
        assert!(c.contains(flag), "{c}");
    }
    assert!(!c.contains("Domain"), "{c}");
    assert_eq!(page.status, 200);
    let csrf = public.sign_in(&app, &log, "pat@example.com").await;
    assert!(public.cookies.contains_key("__Host-sr_session"));
    let mut local = Visitor::new("127.0.0.1:8402");
    let before = mails(&log, "lee@example.com").len();
    local.ask_code(&app, "lee@example.com").await;
    let code = wait_mails(&log, "lee@example.com", before + 1).await.last().unwrap()["code"].as_str().unwrap().to_string();
    let signed = local.try_code(&app, "lee@example.com", &code).await;
    let c = cookie_named(&signed, "sr_session");
    assert!(c.contains("HttpOnly") && c.contains("SameSite=Strict") && !c.contains("Secure"), "{c}");
    // The code worked once.
    let mut again = Visitor::new("127.0.0.1:8402");
    assert_eq!(again.try_code(&app, "lee@example.com", &code).await.status, 400);

    // Headers of a signed-in page.
    let agents = public.get(&app, "/dashboard/agents").await;
    assert_eq!(agents.status, 200);
    let resp = stablerail::api::router(app.state.clone())
        .oneshot(
            Request::get("/dashboard/agents")
                .header(header::HOST, "dash.example.com")
                .header(header::COOKIE, format!("__Host-sr_session={}", public.cookies["__Host-sr_session"]))
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    let h = resp.headers();
    assert!(h["content-security-policy"].to_str().unwrap().contains("frame-ancestors 'none'"));
    assert_eq!(h["x-frame-options"], "DENY");
    assert_eq!(h["cache-control"], "no-store");

    // CSRF: every form refuses a missing, wrong or other session's token.
    let other_csrf = local.get(&app, "/dashboard/agents").await.csrf();
    for token in [None, Some("wrong"), Some(other_csrf.as_str())] {
        let mut form = vec![("name", "x")];
        if let Some(t) = token {
            form.push(("csrf", t));
        }
        for path in ["/dashboard/agents", "/dashboard/sign-out", "/dashboard/sign-out-everywhere", "/dashboard/payout"] {
            let a = public.post(&app, path, &form).await;
            assert_eq!(a.status, 403, "{path} with {token:?}: {}", a.body);
        }
    }
    assert!(public.get(&app, "/dashboard/agents").await.body.contains("No agents yet"), "nothing was created");
    // The sign-in forms too: without the sign-in cookie's value.
    let mut stranger = Visitor::new("127.0.0.1");
    assert_eq!(stranger.post(&app, "/dashboard/sign-in", &[("csrf", "x"), ("email", "a@b.co")]).await.status, 403);
    // A body that is not a form.
    let a = public.send(&app, "POST", "/dashboard/agents", Some(&[("csrf", csrf.as_str())]), Some("application/json")).await;
    assert_eq!(a.status, 415);

    // Five tries: the sixth is refused even when right, and the email is
    // locked out (no new code is sent).
    let email = "sam@example.com";
    let mut v = Visitor::new("127.0.0.1");
    v.ask_code(&app, email).await;
    let code = wait_mails(&log, email, 1).await[0]["code"].as_str().unwrap().to_string();
    let wrong = format!("{:06}", (code.parse::<u32>().unwrap() + 1) % 1_000_000);
    for n in 0..5 {
        let a = v.try_code(&app, email, if n == 2 { "12ab" } else { &wrong }).await;
        assert_eq!(a.status, 400, "try {n}");
        assert!(a.body.contains("That code is not valid"));
    }
    let sixth = v.try_code(&app, email, &code).await;
    assert_eq!(sixth.status, 400);
    assert!(!v.cookies.keys().any(|k| k.ends_with("sr_session")), "the sixth try signed in");
    assert_eq!(v.ask_code(&app, email).await.status, 200, "the same answer when locked out");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(mails(&log, email).len(), 1, "a locked-out email gets no code");
    // At rest: the code's HMAC, never the code.
    let stored: String =
        sqlx::query_scalar("SELECT code_hmac FROM sign_in_codes WHERE email = $1").bind(email).fetch_one(&app.state.db.pool).await.unwrap();
    assert!(stored.len() == 64 && !stored.contains(&code));
    // Bad input: not an email.
    let mut w = Visitor::new("127.0.0.1");
    let a = w.ask_code(&app, "not-an-email").await;
    assert_eq!(a.status, 400);
    assert!(a.body.contains("That is not an email address"));

    // Eleven agents at once: ten are made, the rest refused.
    let creates = (0..12).map(|n| {
        let mut v = Visitor { host: public.host, cookies: public.cookies.clone() };
        let (app, csrf) = (&app, csrf.clone());
        async move { v.post(app, "/dashboard/agents", &[("csrf", &csrf), ("name", &format!("bot-{n}"))]).await }
    });
    let answers = futures::future::join_all(creates).await;
    let made = answers.iter().filter(|a| a.status == 200).count();
    let refused = answers.iter().filter(|a| a.status == 400 && a.body.contains("at most 10 agents")).count();
    assert_eq!((made, refused), (10, 2));
    let page = public.get(&app, "/dashboard/agents").await;
    assert!(page.body.contains("Your agents (10 of 10)") && !page.body.contains("New agent"));

    // Sessions: sign-out everywhere ends the others; an idle one ends.
    let mut second = Visitor::new("dash.example.com");
    second.sign_in(&app, &log, "pat@example.com").await;
    let ended = public.post(&app, "/dashboard/sign-out-everywhere", &[("csrf", &csrf)]).await;
    assert_eq!((ended.status, ended.location.as_deref()), (303, Some("/dashboard/sign-in")));
    let gone = second.get(&app, "/dashboard/payments").await;
    assert_eq!((gone.status, gone.location.as_deref()), (303, Some("/dashboard/sign-in")));
    let mut idle = Visitor::new("127.0.0.1");
    idle.sign_in(&app, &log, "ivy@example.com").await;
    let minutes_ago = stablerail::clock::now_ms() - 31 * 60_000;
    sqlx::query("UPDATE sessions SET last_seen_at = $1").bind(minutes_ago).execute(&app.state.db.pool).await.unwrap();
    assert_eq!(idle.get(&app, "/dashboard/agents").await.status, 303, "an idle session ended");

    // Unknown pages under /dashboard are the dashboard's own 404.
    let a = idle.get(&app, "/dashboard/nothing-here").await;
    assert_eq!(a.status, 404);
    assert!(a.body.contains("<html"));
    app.close().await;
}

async fn one_account_never_sees_another(backend: Backend) {
    let (app, _sink, log) = app_with_mail(backend, "").await;
    let mut alice = Visitor::new("127.0.0.1");
    let a_csrf = alice.sign_in(&app, &log, "alice@example.com").await;
    let (a_agent, a_bearer) = alice.create_agent(&app, &a_csrf, "alice-bot").await;
    let (s, me) = app.call("GET", "/v2/me", None, &[("authorization", &a_bearer)]).await;
    assert_eq!(s, 200, "a key made on the dashboard works on /v2 at once: {me}");
    let a_wallet = me["wallet_address"].as_str().unwrap().to_string();
    let (s, intent) = app
        .call(
            "POST",
            "/v2/intents",
            Some(json!({ "recipient": MERCHANT, "amount": "3", "payer_chain": "base" })),
            &[("authorization", &a_bearer)],
        )
        .await;
    assert_eq!(s, 201, "{intent}");
    let a_intent = intent["intent_id"].as_str().unwrap().to_string();
    // The key's last use is on the agent's page.
    for _ in 0..100 {
        if !alice.get(&app, &format!("/dashboard/agents/{a_agent}")).await.body.contains(">never<") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let page = alice.get(&app, &format!("/dashboard/agents/{a_agent}")).await;
    assert!(!page.body.contains(">never<"), "last use recorded");
    let key_ref = page.body.split("name=\"key\" value=\"").nth(1).unwrap().split('"').next().unwrap().to_string();
    // The agent's webhook endpoints show on its page, with a disabled one's reason.
    let hook = "https://hooks.example.com/alice";
    let (s, _) = app.call("POST", "/v2/webhook_endpoints", Some(json!({ "url": hook })), &[("authorization", &a_bearer)]).await;
    assert_eq!(s, 201);
    sqlx::query("UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = 'deliveries failed for 3 days'")
        .execute(&app.state.db.pool)
        .await
        .unwrap();
    let page = alice.get(&app, &format!("/dashboard/agents/{a_agent}")).await;
    assert!(page.body.contains(hook) && page.body.contains("deliveries failed for 3 days"), "{}", page.body);
    let payments = alice.get(&app, "/dashboard/payments").await;
    assert!(payments.body.contains(&a_intent), "alice sees her intent");
    assert!(alice.get(&app, "/dashboard/wallets").await.body.contains(&a_wallet));

    // Alice's account endpoint, from the Webhooks page; bad input is a 400 page.
    for (url, events, why) in
        [("http://10.0.0.1/hooks", "", "use https, and a public address"), ("https://hooks.example.com/a", "intent.nope", "does not send")]
    {
        let a = alice.post(&app, "/dashboard/webhooks", &[("csrf", &a_csrf), ("url", url), ("events", events)]).await;
        assert_eq!(a.status, 400, "{url}");
        assert!(a.body.contains(why), "{}", a.body);
    }
    let account_hook = "https://hooks.example.com/alice-account";
    let made = alice.post(&app, "/dashboard/webhooks", &[("csrf", &a_csrf), ("url", account_hook), ("events", "")]).await;
    assert_eq!(made.status, 200, "{}", made.body);
    assert!(made.body.contains("whsec_"), "the secret is shown once: {}", made.body);
    let listed = alice.get(&app, "/dashboard/webhooks").await;
    assert!(listed.body.contains(account_hook) && !listed.body.contains("whsec_"), "{}", listed.body);
    let endpoint = listed.body.split("/dashboard/webhooks/we_").nth(1).unwrap().split(['"', '/']).next().unwrap();
    let endpoint = format!("we_{endpoint}");

    let mut bob = Visitor::new("127.0.0.1");
    let b_csrf = bob.sign_in(&app, &log, "bob@example.com").await;
    // Alice's endpoint is not bob's to see or touch.
    assert_eq!(bob.get(&app, &format!("/dashboard/webhooks/{endpoint}")).await.status, 404);
    for action in ["remove", "rotate", "redeliver"] {
        let a = bob.post(&app, &format!("/dashboard/webhooks/{endpoint}/{action}"), &[("csrf", &b_csrf), ("event", "evt_x")]).await;
        assert_eq!(a.status, 404, "{action}: {}", a.body);
    }
    assert!(!bob.get(&app, "/dashboard/webhooks").await.body.contains(account_hook));
    assert!(alice.get(&app, "/dashboard/webhooks").await.body.contains(account_hook), "still alice's");
    // Every page and form with alice's ids: the same 404 as for no such id.
    let show = bob.get(&app, &format!("/dashboard/agents/{a_agent}")).await;
    assert_eq!(show.status, 404);
    let missing = bob.get(&app, "/dashboard/agents/00000000-0000-0000-0000-000000000000").await;
    assert_eq!((missing.status, missing.body.clone()), (404, show.body.clone()));
    for (path, form) in [
        (format!("/dashboard/agents/{a_agent}/rename"), vec![("name", "pwned")]),
        (format!("/dashboard/agents/{a_agent}/disable"), vec![]),
        (format!("/dashboard/agents/{a_agent}/keys"), vec![]),
        (format!("/dashboard/agents/{a_agent}/keys/revoke"), vec![("key", key_ref.as_str())]),
    ] {
        let mut form = form;
        form.push(("csrf", &b_csrf));
        let a = bob.post(&app, &path, &form).await;
        assert_eq!(a.status, 404, "{path}: {}", a.body);
    }
    assert_eq!(bob.post(&app, "/dashboard/payout/remove", &[("csrf", &b_csrf), ("chain", "base")]).await.status, 404);
    for path in ["/dashboard/agents", "/dashboard/wallets", "/dashboard/payments", "/dashboard/payout"] {
        let a = bob.get(&app, path).await;
        assert_eq!(a.status, 200, "{path}");
        for secret in [&a_agent, &a_wallet, &a_intent, &"alice-bot".to_string(), &"alice@example.com".to_string(), &hook.to_string()] {
            assert!(!a.body.contains(secret.as_str()), "{path} shows bob {secret}");
        }
    }
    assert_eq!(bob.get(&app, "/dashboard/operator").await.status, 404, "not an operator");
    // Alice's key pairs: at most 5 live at once (revoked ones stay listed).
    for n in 2..=6 {
        let a = alice.post(&app, &format!("/dashboard/agents/{a_agent}/keys"), &[("csrf", &a_csrf)]).await;
        assert_eq!(a.status, if n <= 5 { 200 } else { 400 }, "pair {n}: {}", a.body);
    }
    let page = alice.get(&app, &format!("/dashboard/agents/{a_agent}")).await;
    assert_eq!(page.body.matches("badge active\">live<").count(), 5);
    // Alice's agent and key are as they were.
    let (s, me) = app.call("GET", "/v2/me", None, &[("authorization", &a_bearer)]).await;
    assert_eq!(s, 200);
    assert_eq!((me["name"].as_str(), me["status"].as_str()), (Some("alice-bot"), Some("active")));

    // Where bob's email is paid: validated, then used by an intent by email;
    // the operator's directory is only for emails with no account.
    let payout = "0x2222222222222222222222222222222222222223";
    for (chain, address, why) in [
        ("base", "0x12", "not a valid address"),
        ("base", "0x0000000000000000000000000000000000000000", "cannot receive"),
        ("base", "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", "cannot receive"),
        ("nowhere", payout, "does not receive payments"),
    ] {
        let a = bob.post(&app, "/dashboard/payout", &[("csrf", &b_csrf), ("chain", chain), ("address", address)]).await;
        assert_eq!(a.status, 400, "{address}");
        assert!(a.body.contains(why), "{}", a.body);
    }
    stablerail::store::agents::set_recipient(&app.state.db, "bob@example.com", "base", MERCHANT).await.unwrap();
    let (s, r) = app
        .call(
            "POST",
            "/v2/intents",
            Some(json!({ "email": "bob@example.com", "amount": "2", "payer_chain": "base" })),
            &[("authorization", &a_bearer)],
        )
        .await;
    assert_eq!(s, 400, "an account with no payout address on base is not paid from the directory: {r}");
    let a = bob.post(&app, "/dashboard/payout", &[("csrf", &b_csrf), ("chain", "base"), ("address", payout)]).await;
    assert_eq!((a.status, a.location.as_deref()), (303, Some("/dashboard/payout")));
    let (s, r) = app
        .call(
            "POST",
            "/v2/intents",
            Some(json!({ "email": "Bob@Example.com", "amount": "2", "payer_chain": "base" })),
            &[("authorization", &a_bearer)],
        )
        .await;
    assert_eq!(s, 201, "{r}");
    // The paying agent sees the email, not where bob is paid; the intent pays there.
    assert_eq!(r["merchant_recipient"], "bob@example.com");
    assert!(!r.to_string().to_lowercase().contains(&payout[2..]), "{r}");
    let id = r["intent_id"].as_str().unwrap();
    let stored = stablerail::store::intents::get(&app.state.db, id).await.unwrap().unwrap();
    assert!(stored.merchant_recipient.eq_ignore_ascii_case(payout));
    let (_, public) = app.call("GET", &format!("/api/intents/{id}"), None, &[]).await;
    assert_eq!(public["merchant_recipient"], "bob@example.com", "the public read never shows the address");
    assert!(bob.get(&app, "/dashboard/payments").await.body.contains(id), "bob sees what is paid to him");
    app.close().await;
}

/// `signup = "invite"`: an invited email and a stranger's get the same
/// answer; only the invited one gets a code. Code requests are limited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invite_only_and_no_enumeration() {
    let dir = tempfile::tempdir().unwrap();
    let (_sink, port, log2) = mail_sink(dir.path());
    let app = App::start(
        Backend::Sqlite,
        &format!(
            "[dashboard]\nenabled = true\nsignup = \"invite\"\nsmtp_url = \"smtp://127.0.0.1:{port}\"\nsign_in_requests_per_minute = 6\n"
        ),
    )
    .await;
    stablerail::store::dashboard::invite(&app.state.db, "guest@example.com", 0).await.unwrap();
    let mut v = Visitor::new("127.0.0.1");
    let known = v.ask_code(&app, "guest@example.com").await;
    let unknown = v.ask_code(&app, "nobody@example.com").await;
    assert_eq!((known.status, unknown.status), (200, 200));
    let strip = |a: &Answer, email: &str| {
        let token = a.csrf();
        a.body.replace(email, "EMAIL").replace(&token, "TOKEN")
    };
    assert_eq!(strip(&known, "guest@example.com"), strip(&unknown, "nobody@example.com"));
    wait_mails(&log2, "guest@example.com", 1).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(mails(&log2, "nobody@example.com").is_empty());
    // Six requests a minute from one client (each ask above was two: the
    // page is not counted, the post is): then 429 with Retry-After.
    let mut last = 0;
    for _ in 0..6 {
        last = v.ask_code(&app, "nobody@example.com").await.status;
    }
    assert_eq!(last, 429);
    app.close().await;
}

/// The journey a new user takes, in Chromium, on a devnet (base → arbitrum).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_user_in_a_real_browser() {
    let tmp = tempfile::tempdir().unwrap();
    let (_sink, smtp, log) = mail_sink(tmp.path());
    let dn = Devnet::start(29045, "base,arbitrum", &dashboard_config(smtp, "")).await;
    let port = free_port();
    let _service = serve(&dn, port);
    let bin = common::stablerail_bin().display().to_string();
    let cfg = dn.config_path().display().to_string();
    let db = format!("sqlite://{}", dn.dir.path().join("sr.db").display());
    let payout = "0x3333333333333333333333333333333333333334";
    let rx = crate::webhooks::Receiver::new(tmp.path());
    let _receiving = rx.start();
    // STABLERAIL_SCREENSHOTS=docs/dashboard keeps the pictures docs/dashboard.md shows.
    let shots = std::env::var("STABLERAIL_SCREENSHOTS").map(|d| common::repo_root().join(d)).unwrap_or_else(|_| tmp.path().join("shots"));
    let input = json!({
        "base": format!("http://127.0.0.1:{port}"),
        "mail": log,
        "email": "new.user@example.com",
        "shots": shots,
        "cli": [bin, "--config", cfg, "--database", db],
        "fund": [bin, "devnet", "fund", "--dir", dn.dir.path()],
        "payer_chain": "base",
        "target_chain": "arbitrum",
        "merchant": MERCHANT,
        "payout": payout,
        "target_rpc": dn.rpc_url("arbitrum"),
        "target_token": dn.token("arbitrum", "usdc"),
        "hook_url": rx.url(),
        "hook_secrets": rx.secrets,
    });
    let out = Command::new("node")
        .arg(devnet_script("dashboard.mjs"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = {
        use std::io::Write;
        let mut child = out;
        child.stdin.take().unwrap().write_all(input.to_string().as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    };
    assert!(out.status.success(), "the journey failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(seen["pages"].as_array().unwrap().len(), 12, "{seen}");
    assert_eq!(seen["cookie"], json!([{ "name": "sr_session", "httpOnly": true, "sameSite": "Strict", "secure": false }]));
    assert_eq!(seen["revoked_status"], 401);
    // On chain: the merchant got 1 USDC on arbitrum, the payout address 2.
    let units = |n: u64| alloy_primitives::U256::from(n);
    assert_eq!(dn.balance_of("arbitrum", "usdc", payout).await, units(2_000_000));
    assert_eq!(dn.balance_of("arbitrum", "usdc", MERCHANT).await, units(1_000_000));
    assert_eq!(seen["payout_balance"], "2000000");
    // The intent by email, read publicly, shows the email, not the address.
    let id = seen["email_intent_id"].as_str().unwrap();
    let (_, public) = common::process::http(port, "GET", &format!("/api/intents/{id}"), None);
    assert_eq!(public["merchant_recipient"], "new.user@example.com");
    assert_eq!(public["status"], "TARGET_SETTLED");
    // The account's endpoint, added in the browser, heard the agent's intent
    // settle, signed with the secret the page showed.
    let got = rx.until(seen["intent_id"].as_str().unwrap(), "TARGET_SETTLED").await;
    assert!(got.iter().all(|v| v["verified"] == json!([0])), "{got:?}");
}

/// Sign-in tries count per email across codes (issue 69): three wrong
/// tries, a new code, three more: the email is locked, the right code is
/// refused, and its account's owner is told once by mail. Wrong codes are
/// budgeted per client too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_tries_count_across_codes_and_the_owner_is_told() {
    let (app, _sink, log) = app_with_mail(Backend::Sqlite, "resend_seconds = 1\nfailed_tries_per_client_per_hour = 12\n").await;
    let email = "owner@example.com";
    // The owner has an account (signed in once).
    Visitor::new("127.0.0.1").sign_in(&app, &log, email).await;
    let mut attacker = Visitor::new("127.0.0.1");
    let mut codes = vec![];
    for round in 0..2 {
        let before = mails(&log, email).len();
        if round == 1 {
            tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
        }
        assert_eq!(attacker.ask_code(&app, email).await.status, 200);
        let code = wait_mails(&log, email, before + 1).await.last().unwrap()["code"].as_str().unwrap().to_string();
        let wrong = format!("{:06}", (code.parse::<u32>().unwrap() + 1) % 1_000_000);
        for _ in 0..3 {
            assert_eq!(attacker.try_code(&app, email, &wrong).await.status, 400);
        }
        codes.push(code);
    }
    let right = attacker.try_code(&app, email, codes.last().unwrap()).await;
    assert_eq!(right.status, 400, "a new code gave no tries back: locked");
    assert!(!attacker.cookies.keys().any(|k| k.ends_with("sr_session")), "the right code after six wrong ones signed in");
    // The owner hears of it, once for the lockout.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let notices = loop {
        let n: Vec<Value> =
            mails(&log, email).into_iter().filter(|m| m["subject"].as_str().is_some_and(|s| s.contains("locked"))).collect();
        if !n.is_empty() || std::time::Instant::now() > deadline {
            break n;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(notices.len(), 1, "one lockout notice: {notices:?}");
    // Locked: no new code is sent, and the answer is the same.
    let before = mails(&log, email).len();
    assert_eq!(attacker.ask_code(&app, email).await.status, 200);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(mails(&log, email).len(), before, "a locked email gets no code");
    // The lock grows: a second lockout lasts twice the first.
    let row: (i64, i64) = sqlx::query_as("SELECT lockouts, locked_until FROM sign_in_codes WHERE email = $1")
        .bind(email)
        .fetch_one(&app.state.db.pool)
        .await
        .unwrap();
    assert_eq!(row.0, 1);
    // Guesses spread over many emails meet the client's budget (12 an hour
    // here; seven were spent above): past it every code is refused unchecked.
    let mut other = Visitor::new("127.0.0.1");
    for n in 0..8 {
        let e = format!("spread{n}@example.com");
        other.ask_code(&app, &e).await;
        let code = wait_mails(&log, &e, 1).await[0]["code"].as_str().unwrap().to_string();
        if n < 5 {
            let wrong = format!("{:06}", (code.parse::<u32>().unwrap() + 1) % 1_000_000);
            assert_eq!(other.try_code(&app, &e, &wrong).await.status, 400);
        } else {
            let a = other.try_code(&app, &e, &code).await;
            assert_eq!(a.status, 400, "{e}: the client's budget of wrong codes is spent, even a right code is refused");
        }
    }
    app.close().await;
}

/// Behind a proxy that rewrites Host to 127.0.0.1, `public_url` decides the
/// cookies' hardening, never the request's Host; plain `smtp://` to a
/// non-loopback relay is refused at load.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cookies_follow_public_url_and_smtp_needs_tls() {
    let (app, _sink, _log) = app_with_mail(Backend::Sqlite, "public_url = \"https://pay.example.com\"\n").await;
    let mut proxied = Visitor::new("127.0.0.1:8402");
    let page = proxied.get(&app, "/dashboard/sign-in").await;
    let c = cookie_named(&page, "__Host-sr_signin");
    assert!(c.contains("Secure") && c.contains("HttpOnly"), "{c}");
    app.close().await;
    for (url, ok) in [
        ("smtp://mail.example.com:587", false),
        ("smtp://user:pw@mail.example.com:25/", false),
        ("smtp://mail.example.com:587?tls=required", true),
        ("smtps://mail.example.com:465", true),
        ("smtp://127.0.0.1:2525", true),
        ("smtp://[::1]:2525", true),
    ] {
        // The dashboard's keys are checked first; a refusal names its key.
        let text = format!("[dashboard]\nenabled = true\nsmtp_url = \"{url}\"\n");
        let err = stablerail::config::Config::parse(&text).err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(err.contains("smtp_url"), !ok, "{url}: {err}");
    }
    let insecure = stablerail::config::Config::parse("[dashboard]\npublic_url = \"http://pay.example.com\"\n");
    assert!(insecure.err().is_some_and(|e| e.to_string().contains("public_url")));
}
