//! A test authorization server: signing keys the test generates (ES256, EdDSA, RS256, PS256, with
//! aws-lc-rs), its RFC 8414 metadata and its JWKS served on a loopback port, and access tokens
//! signed with them, good or bad in the ways a test asks for.

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex, PoisonError},
    time::{SystemTime, UNIX_EPOCH},
};

use aws_lc_rs::{
    encoding::AsDer as _,
    rand::SystemRandom,
    rsa,
    signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair as _},
};
use axum::{Json, Router, extract::State, routing::get};
use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header, jwk::Jwk};
use serde_json::{Value, json};

/// One signing key: its id, algorithm, private half and public JWK.
#[derive(Clone)]
pub(super) struct SigningKey {
    /// Its key id (`kid`).
    pub(super) kid: String,
    /// What it signs with.
    pub(super) alg: Algorithm,
    encoding: EncodingKey,
    /// Its public half.
    pub(super) jwk: Jwk,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("kid", &self.kid)
            .field("alg", &self.alg)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// A fresh P-256 key (ES256) with id `kid`.
    ///
    /// # Panics
    ///
    /// If the key cannot be generated.
    pub(super) fn es256(kid: &str) -> Self {
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
                .expect("a P-256 key");
        Self::from_pkcs8(
            kid,
            Algorithm::ES256,
            EncodingKey::from_ec_der(pkcs8.as_ref()),
        )
    }

    /// A fresh Ed25519 key (EdDSA) with id `kid`. Its JWK is written here: `jsonwebtoken` reads
    /// only version 1 PKCS#8 for that, and aws-lc-rs makes version 2.
    ///
    /// # Panics
    ///
    /// If the key cannot be generated.
    pub(super) fn ed25519(kid: &str) -> Self {
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).expect("an Ed25519 key");
        let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).expect("the key reads back");
        let x = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(pair.public_key().as_ref());
        let jwk =
            serde_json::from_value(json!({"kty": "OKP", "crv": "Ed25519", "x": x, "alg": "EdDSA"}))
                .expect("an OKP JWK");
        Self::with_jwk(
            kid,
            Algorithm::EdDSA,
            EncodingKey::from_ed_der(pkcs8.as_ref()),
            jwk,
        )
    }

    /// A fresh 2048-bit RSA key with id `kid` signing with `alg` (RS256, what most
    /// authorization servers sign with, or PS256).
    ///
    /// # Panics
    ///
    /// If the key cannot be generated.
    pub(super) fn rsa(kid: &str, alg: Algorithm) -> Self {
        let pair = rsa::KeyPair::generate(rsa::KeySize::Rsa2048).expect("an RSA key");
        let pkcs8 = pair.as_der().expect("the key as PKCS#8");
        Self::from_pkcs8(
            kid,
            alg,
            EncodingKey::from_rsa_der(rsa_private_key(pkcs8.as_ref())),
        )
    }

    fn from_pkcs8(kid: &str, alg: Algorithm, encoding: EncodingKey) -> Self {
        let jwk = Jwk::from_encoding_key(&encoding, alg).expect("a public JWK");
        Self::with_jwk(kid, alg, encoding, jwk)
    }

    fn with_jwk(kid: &str, alg: Algorithm, encoding: EncodingKey, mut jwk: Jwk) -> Self {
        jwk.common.key_id = Some(kid.to_owned());
        Self {
            kid: kid.to_owned(),
            alg,
            encoding,
            jwk,
        }
    }

    /// `claims` signed with this key, naming it in the header.
    ///
    /// # Panics
    ///
    /// If signing fails.
    pub(super) fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding).expect("a signed token")
    }
}

/// The PKCS#1 `RSAPrivateKey` a PKCS#8 `PrivateKeyInfo` holds (`SEQUENCE { INTEGER,
/// SEQUENCE, OCTET STRING }`, the key in the octet string): jsonwebtoken reads the former,
/// aws-lc-rs writes the latter.
fn rsa_private_key(pkcs8: &[u8]) -> &[u8] {
    /// The content of the DER value at the start of `input` with tag `tag`, and what follows.
    fn value(input: &[u8], tag: u8) -> (&[u8], &[u8]) {
        assert_eq!(input[0], tag, "DER tag");
        let (length, header) = match input[1] {
            short @ 0..0x80 => (usize::from(short), 2),
            long => {
                let bytes = usize::from(long & 0x7f);
                let length = input[2..2 + bytes]
                    .iter()
                    .fold(0, |n, &b| (n << 8) | usize::from(b));
                (length, 2 + bytes)
            }
        };
        input[header..].split_at(length)
    }
    let (info, _) = value(pkcs8, 0x30);
    let (_version, rest) = value(info, 0x02);
    let (_algorithm, rest) = value(rest, 0x30);
    value(rest, 0x04).0
}

/// `claims` with `{"alg": "none"}` and no signature.
pub(super) fn unsigned(claims: &Value) -> String {
    let b64 = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "typ": "JWT"})),
        b64(claims)
    )
}

/// `claims` with `{"alg": "HS256", "kid": key.kid}`, signed with HMAC keyed by the key's public
/// JWK text: the confusion attack on servers that verify with whatever the header says.
pub(super) fn hmac_with_public_key(key: &SigningKey, claims: &Value) -> String {
    let secret = serde_json::to_vec(&key.jwk).expect("JWK as JSON");
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some(key.kid.clone());
    jsonwebtoken::encode(
        &header,
        claims,
        &EncodingKey::from_secret(&secret).expect("an HMAC key"),
    )
    .expect("HS256")
}

/// Seconds since the epoch.
pub(super) fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// An authorization server on a loopback port: metadata at
/// `/.well-known/oauth-authorization-server`, keys at `/jwks`; the keys it publishes can be
/// replaced while it runs (rotation). Stops when dropped.
#[derive(Debug)]
pub(super) struct Issuer {
    /// `http://127.0.0.1:PORT`, its issuer identifier.
    pub(super) url: String,
    published: Arc<Mutex<Vec<Jwk>>>,
    server: tokio::task::JoinHandle<()>,
}

impl Issuer {
    /// Serves the metadata and `keys` (their public halves).
    ///
    /// # Panics
    ///
    /// If it cannot listen.
    pub(super) async fn start(keys: &[&SigningKey]) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let address: SocketAddr = listener.local_addr().expect("its address");
        let url = format!("http://{address}");
        let published = Arc::new(Mutex::new(keys.iter().map(|k| k.jwk.clone()).collect()));
        let app = Router::new()
            .route(
                "/.well-known/oauth-authorization-server",
                get(
                    |State((url, _)): State<(String, Arc<Mutex<Vec<Jwk>>>)>| async move {
                        Json(json!({
                            "issuer": url,
                            "jwks_uri": format!("{url}/jwks"),
                            "authorization_endpoint": format!("{url}/authorize"),
                            "token_endpoint": format!("{url}/token"),
                        }))
                    },
                ),
            )
            .route(
                "/jwks",
                get(
                    |State((_, keys)): State<(String, Arc<Mutex<Vec<Jwk>>>)>| async move {
                        let keys = keys.lock().unwrap_or_else(PoisonError::into_inner).clone();
                        Json(json!({"keys": keys}))
                    },
                ),
            )
            .with_state((url.clone(), Arc::clone(&published)));
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            url,
            published,
            server,
        }
    }

    /// Publishes `keys` instead of the keys before.
    pub(super) fn publish(&self, keys: &[&SigningKey]) {
        *self
            .published
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = keys.iter().map(|k| k.jwk.clone()).collect();
    }

    /// Claims of a good token from this issuer for `audience`, with `scope`, valid for an
    /// hour.
    pub(super) fn claims(&self, audience: &str, subject: &str, scope: &str) -> Value {
        let now = now();
        json!({
            "iss": self.url, "aud": audience, "sub": subject, "scope": scope,
            "iat": now, "nbf": now - 1, "exp": now + 3600,
        })
    }
}

impl Drop for Issuer {
    fn drop(&mut self) {
        self.server.abort();
    }
}
