//! SCRAM-SHA-256 (RFC 5802, RFC 7677) on the server side, as PostgreSQL
//! speaks it: the exchange that proves a client knows a password without
//! sending it, against a stored verifier that does not contain it.
//!
//! ```text
//!  client                                   server (this module)
//!  SASLInitialResponse "SCRAM-SHA-256"
//!    n,,n=,r=<cnonce>            ──────►   client_first: nonce <cnonce><snonce>
//!                                ◄──────   r=<cnonce><snonce>,s=<salt>,i=<iter>
//!  SASLResponse
//!    c=biws,r=<nonce>,p=<proof>  ──────►   client_final: ClientKey = proof XOR
//!                                            HMAC(StoredKey, AuthMessage);
//!                                            H(ClientKey) == StoredKey ?
//!                                ◄──────   v=HMAC(ServerKey, AuthMessage)
//! ```
//!
//! The verifier is PostgreSQL's (`pg_authid.rolpassword`):
//! `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`, base64
//! fields, where SaltedPassword = PBKDF2-HMAC-SHA-256(SASLprep(password),
//! salt, iterations), ClientKey = HMAC(SaltedPassword, "Client Key"),
//! StoredKey = SHA-256(ClientKey), ServerKey = HMAC(SaltedPassword,
//! "Server Key"). A plaintext password is turned into one at load time
//! (`postgres-protocol`'s `scram_sha_256`, which applies SASLprep as
//! libpq does), so the server never holds a password after start.
//!
//! As in PostgreSQL: the user name inside the SCRAM message is ignored
//! (the startup packet's counts; libpq sends `n=`), channel binding is not
//! offered (no TLS: a client's `p=` flag is malformed, `y` is accepted),
//! an authorization identity (`a=`) is refused, and an unknown user gets a
//! mock salt derived from the user name and a per-process secret, so its
//! exchange looks like a real one and fails with the same message as a
//! wrong password. Malformed messages are `08P01` "malformed SCRAM
//! message" with a detail naming the fault; keys are compared in
//! constant time.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

/// The one mechanism offered (no `-PLUS`: no TLS, so no channel binding).
pub const MECHANISM: &str = "SCRAM-SHA-256";

type HmacSha256 = Hmac<Sha256>;

/// A SCRAM-SHA-256 verifier, as PostgreSQL stores it.
#[derive(Clone, PartialEq, Eq)]
pub struct Verifier {
    pub iterations: u32,
    pub salt: Vec<u8>,
    pub stored_key: [u8; 32],
    pub server_key: [u8; 32],
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Verifier(SCRAM-SHA-256, keys hidden)")
    }
}

impl Verifier {
    /// Parses `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`;
    /// the error says which part is wrong.
    pub fn parse(s: &str) -> Result<Verifier, String> {
        let rest = s.strip_prefix("SCRAM-SHA-256$").ok_or("a verifier starts with SCRAM-SHA-256$")?;
        let (params, keys) = rest.split_once('$').ok_or("expected <iterations>:<salt>$<StoredKey>:<ServerKey>")?;
        let (iter, salt) = params.split_once(':').ok_or("expected <iterations>:<salt> after SCRAM-SHA-256$")?;
        let iterations: u32 =
            iter.parse().ok().filter(|&i| i > 0).ok_or_else(|| format!("bad iteration count {iter:?}"))?;
        let salt = B64.decode(salt).map_err(|e| format!("the salt is not base64 ({e})"))?;
        if salt.is_empty() {
            return Err("the salt is empty".into());
        }
        let (stored, server) = keys.split_once(':').ok_or("expected <StoredKey>:<ServerKey>")?;
        Ok(Verifier {
            iterations,
            salt,
            stored_key: key32(stored, "StoredKey")?,
            server_key: key32(server, "ServerKey")?,
        })
    }

    /// The verifier of `password` with a fresh random salt and 4096
    /// iterations (SASLprep applied, as libpq and PostgreSQL do).
    pub fn from_password(password: &str) -> Verifier {
        let s = postgres_protocol::password::scram_sha_256(password.as_bytes());
        Verifier::parse(&s).expect("postgres-protocol writes PostgreSQL's verifier format")
    }

    /// A verifier no password matches, with a salt derived from `user`
    /// and `secret` (an unknown user's exchange looks like a real one and
    /// its salt does not change between attempts).
    pub fn mock(user: &str, secret: &[u8; 32]) -> Verifier {
        let mut mac = hmac(secret, b"mock salt");
        mac.update(user.as_bytes());
        let salt = mac.finalize().into_bytes()[..16].to_vec();
        let mut stored_key = [0u8; 32];
        let mut server_key = [0u8; 32];
        rand::fill(&mut stored_key);
        rand::fill(&mut server_key);
        Verifier { iterations: 4096, salt, stored_key, server_key }
    }
}

fn key32(b64: &str, what: &str) -> Result<[u8; 32], String> {
    let bytes = B64.decode(b64).map_err(|e| format!("the {what} is not base64 ({e})"))?;
    bytes.try_into().map_err(|b: Vec<u8>| format!("the {what} has {} bytes, not 32", b.len()))
}

fn hmac(key: &[u8], data: &[u8]) -> HmacSha256 {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(data);
    mac
}

/// How an exchange fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScramError {
    /// `08P01` "malformed SCRAM message", with the detail.
    Malformed(String),
    /// `28P01`: the proof does not match (or the user is unknown).
    Failed,
}

fn malformed(detail: impl Into<String>) -> ScramError {
    ScramError::Malformed(detail.into())
}

/// What the server keeps between its first message and the client's final one.
#[derive(Debug, Clone)]
pub struct ServerFirst {
    /// The gs2 header the client sent (`n,,` or `y,,`): `c=` must repeat it.
    gs2_header: String,
    client_first_bare: String,
    /// The message sent: `r=<nonce>,s=<salt>,i=<iterations>`.
    pub message: String,
    nonce: String,
}

/// Reads the client-first message and answers with the server-first one;
/// `server_nonce` is fresh random printable text.
pub fn client_first(msg: &[u8], verifier: &Verifier, server_nonce: &str) -> Result<ServerFirst, ScramError> {
    let msg = std::str::from_utf8(msg).map_err(|_| malformed("The message is not valid UTF-8."))?;
    let (flag, rest) = msg.split_once(',').ok_or_else(|| malformed("Expected a channel-binding flag and ','."))?;
    match flag {
        "n" | "y" => {}
        f if f.starts_with("p=") => {
            return Err(malformed(
                "The client selected SCRAM-SHA-256 without channel binding, but the SCRAM message includes \
                 channel binding data.",
            ));
        }
        f => return Err(malformed(format!("Unexpected channel-binding flag \"{f}\"."))),
    }
    let (authzid, bare) = rest.split_once(',').ok_or_else(|| malformed("Expected ',' after the authzid."))?;
    if !authzid.is_empty() {
        return Err(malformed("Client uses authorization identity, but it is not supported."));
    }
    let mut attrs = bare.split(',');
    if attrs.next().and_then(|a| a.strip_prefix("n=")).is_none() {
        return Err(malformed("Expected attribute \"n\" (the user name; PostgreSQL's clients send it empty)."));
    }
    let client_nonce =
        attrs.next().and_then(|a| a.strip_prefix("r=")).ok_or_else(|| malformed("Expected attribute \"r\"."))?;
    if client_nonce.is_empty() || !client_nonce.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        return Err(malformed("The client nonce must be printable characters other than ','."));
    }
    let nonce = format!("{client_nonce}{server_nonce}");
    let message = format!("r={nonce},s={},i={}", B64.encode(&verifier.salt), verifier.iterations);
    let gs2_header = format!("{flag},,");
    Ok(ServerFirst { gs2_header, client_first_bare: bare.to_string(), message, nonce })
}

/// Checks the client-final message's proof; on success returns the
/// server-final message (`v=<ServerSignature>`).
pub fn client_final(first: &ServerFirst, verifier: &Verifier, msg: &[u8]) -> Result<String, ScramError> {
    let msg = std::str::from_utf8(msg).map_err(|_| malformed("The message is not valid UTF-8."))?;
    let (without_proof, proof) = msg.rsplit_once(",p=").ok_or_else(|| malformed("Expected attribute \"p\" last."))?;
    let mut attrs = without_proof.split(',');
    let binding =
        attrs.next().and_then(|a| a.strip_prefix("c=")).ok_or_else(|| malformed("Expected attribute \"c\"."))?;
    let binding = B64.decode(binding).map_err(|_| malformed("The channel binding is not base64."))?;
    if binding != first.gs2_header.as_bytes() {
        return Err(malformed("Unexpected SCRAM channel-binding attribute in client-final-message."));
    }
    let nonce =
        attrs.next().and_then(|a| a.strip_prefix("r=")).ok_or_else(|| malformed("Expected attribute \"r\"."))?;
    if nonce != first.nonce {
        return Err(malformed("The nonce does not match."));
    }
    let proof = B64.decode(proof).map_err(|_| malformed("The proof is not base64."))?;
    let proof: [u8; 32] = proof.try_into().map_err(|_| malformed("The proof is not 32 bytes."))?;
    let auth_message = format!("{},{},{}", first.client_first_bare, first.message, without_proof);
    let signature = hmac(&verifier.stored_key, auth_message.as_bytes()).finalize().into_bytes();
    let mut client_key = [0u8; 32];
    for (k, (p, s)) in client_key.iter_mut().zip(proof.iter().zip(signature.iter())) {
        *k = p ^ s;
    }
    let stored = Sha256::digest(client_key);
    if !constant_time_eq(&stored, &verifier.stored_key) {
        return Err(ScramError::Failed);
    }
    let server_signature = hmac(&verifier.server_key, auth_message.as_bytes()).finalize().into_bytes();
    Ok(format!("v={}", B64.encode(server_signature)))
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A fresh server nonce: 18 random bytes in base64 (as PostgreSQL's).
pub fn server_nonce() -> String {
    let mut bytes = [0u8; 18];
    rand::fill(&mut bytes);
    B64.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use postgres_protocol::authentication::sasl::{ChannelBinding, ScramSha256};

    /// A full exchange with postgres-protocol's client (tokio-postgres's).
    fn exchange(verifier: &Verifier, password: &str) -> Result<(), ScramError> {
        let mut client = ScramSha256::new(password.as_bytes(), ChannelBinding::unsupported());
        let first = client_first(client.message(), verifier, &server_nonce())?;
        client.update(first.message.as_bytes()).expect("the client takes the server-first message");
        let last = client_final(&first, verifier, client.message())?;
        client.finish(last.as_bytes()).map_err(|e| malformed(format!("the client refused v=: {e}")))
    }

    #[test]
    fn the_right_password_passes_and_the_client_accepts_the_server_signature() {
        let v = Verifier::from_password("sekrit");
        assert_eq!(exchange(&v, "sekrit"), Ok(()));
        assert_eq!(exchange(&v, "sekriT"), Err(ScramError::Failed));
        assert_eq!(exchange(&Verifier::mock("x", &[7; 32]), "sekrit"), Err(ScramError::Failed));
    }

    #[test]
    fn a_postgresql_verifier_is_read_as_postgresql_wrote_it() {
        // From PostgreSQL 15: SET password_encryption = 'scram-sha-256';
        // CREATE ROLE r PASSWORD 'pencil'; SELECT rolpassword FROM pg_authid.
        let v = Verifier::parse(
            "SCRAM-SHA-256$4096:Q9SRdZoHEl88zWU17cX4bA==$iL9Oc1DIc1yFp711PP5HwRYQOWlkR0eU7unamGUo0RQ=:\
             soFyRtuGXvTR+W0snItePifk/9oxXOuJ8nE1eRvG4Bk=",
        );
        let v = v.expect("a well-formed verifier");
        assert_eq!(exchange(&v, "pencil"), Ok(()));
        assert_eq!(exchange(&v, "pencil "), Err(ScramError::Failed));
        assert_eq!(v.iterations, 4096);
        assert!(Verifier::parse("SCRAM-SHA-256$0:c2FsdA==$AAAA:AAAA").unwrap_err().contains("iteration"));
        assert!(Verifier::parse("SCRAM-SHA-256$4096:c2FsdA==$AAAA:AAAA").unwrap_err().contains("32"));
        assert!(Verifier::parse("md5abc").is_err());
    }

    #[test]
    fn malformed_client_messages_are_named() {
        let v = Verifier::from_password("p");
        let bad = |m: &str| client_first(m.as_bytes(), &v, "SN").unwrap_err();
        assert!(matches!(bad("p=tls-server-end-point,,n=,r=x"), ScramError::Malformed(d) if d.contains("channel")));
        assert!(matches!(bad("n,a=bob,n=,r=x"), ScramError::Malformed(d) if d.contains("authorization")));
        assert!(matches!(bad("n,,r=x"), ScramError::Malformed(_)));
        assert!(matches!(bad("n,,n=,r="), ScramError::Malformed(_)));
        let first = client_first(b"n,,n=,r=abc", &v, "SN").unwrap();
        let fin = |m: &str| client_final(&first, &v, m.as_bytes()).unwrap_err();
        let proof = B64.encode([0u8; 32]);
        assert!(
            matches!(fin(&format!("c=biws,r=abcSN,p=!!{proof}")), ScramError::Malformed(d) if d.contains("base64"))
        );
        assert!(matches!(fin(&format!("c=biws,r=abcXX,p={proof}")), ScramError::Malformed(d) if d.contains("nonce")));
        assert!(matches!(fin(&format!("c=eSws,r=abcSN,p={proof}")), ScramError::Malformed(d) if d.contains("binding")));
        assert!(matches!(fin("c=biws,r=abcSN"), ScramError::Malformed(_)));
        assert!(matches!(fin(&format!("c=biws,r=abcSN,p={}", B64.encode([0u8; 31]))), ScramError::Malformed(_)));
        assert_eq!(fin(&format!("c=biws,r=abcSN,p={proof}")), ScramError::Failed);
    }
}
