//! Criterion benchmark of what authentication adds to each request (BENCHMARKS.md, "Who may
//! call: the cost of API keys and access tokens"): reading `Authorization: Bearer` and finding
//! an API key among 1, 100 and 1,000 (a SHA-256 and a constant-time compare with every entry),
//! checking an access token (ES256 and EdDSA: the signature, `exp`, `nbf`, `iss`, `aud`)
//! against keys already fetched, and identifying a token checked before (remembered until it
//! expires). The group is `auth`.

use std::{fmt::Write as _, time::Duration};

use aws_lc_rs::{
    rand::SystemRandom,
    signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair as _},
};
use criterion::{Criterion, criterion_group, criterion_main};
use jsonwebtoken::{
    Algorithm, EncodingKey, Header,
    jwk::{Jwk, JwkSet},
};
use reactor_mcp_server::internals::auth::{
    AuthOptions, Authenticator, Jwks, KeySet, OAuth, OAuthOptions, jwt,
};
use serde_json::json;

const ISSUER: &str = "https://auth.example";
const AUDIENCE: &str = "https://mcp.example/mcp";

/// A keys file of `n` keys, `key-0` ... `key-{n-1}`.
fn keys_file(n: usize) -> String {
    let mut text = String::new();
    for i in 0..n {
        let digest: String = sha256_hex(&format!("key-{i}"));
        let _ = write!(
            text,
            "[[keys]]\nname = \"k{i}\"\nsha256 = \"{digest}\"\ntoolsets = [\"*\"]\n\n"
        );
    }
    text
}

fn sha256_hex(text: &str) -> String {
    aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, text.as_bytes())
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A token of `alg` signed by a fresh key, and that key's JWK (id `k`).
fn token(alg: Algorithm) -> (String, Jwk) {
    let rng = SystemRandom::new();
    let (encoding, jwk) = match alg {
        Algorithm::ES256 => {
            let pkcs8 =
                EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
            let encoding = EncodingKey::from_ec_der(pkcs8.as_ref());
            let jwk = Jwk::from_encoding_key(&encoding, alg).unwrap();
            (encoding, jwk)
        }
        _ => {
            let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
            let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
            let x: String = base64url(pair.public_key().as_ref());
            let jwk =
                serde_json::from_value(json!({"kty": "OKP", "crv": "Ed25519", "x": x})).unwrap();
            (EncodingKey::from_ed_der(pkcs8.as_ref()), jwk)
        }
    };
    let mut jwk: Jwk = jwk;
    jwk.common.key_id = Some("k".into());
    let mut header = Header::new(alg);
    header.kid = Some("k".into());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let claims = json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "scope": "a b",
        "iat": now, "nbf": now, "exp": now + 3600});
    (
        jsonwebtoken::encode(&header, &claims, &encoding).unwrap(),
        jwk,
    )
}

/// Base64url without padding.
fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().fold(0u32, |n, b| (n << 8) | u32::from(*b)) << (8 * (3 - chunk.len()));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

fn auth(c: &mut Criterion) {
    let mut group = c.benchmark_group("auth");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for n in [1, 100, 1000] {
        let (keys, _) = KeySet::parse(std::path::Path::new("keys.toml"), &keys_file(n)).unwrap();
        let key = format!("key-{}", n - 1);
        group.bench_function(format!("key lookup, {n} keys"), |b| {
            b.iter(|| std::hint::black_box(keys.find(std::hint::black_box(&key), 0)));
        });
    }

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("keys.toml");
    std::fs::write(&file, keys_file(10)).unwrap();
    let options = AuthOptions {
        keys_file: Some(file),
        ..AuthOptions::default()
    };
    let authenticator = Authenticator::new(&options, "/mcp").unwrap().unwrap();
    let mut headers = axum::http::HeaderMap::new();
    headers.insert("authorization", "Bearer key-9".parse().unwrap());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    group.bench_function(
        "authenticate an API key (10 keys), headers to identity",
        |b| {
            b.iter(|| {
                runtime
                    .block_on(authenticator.authenticate(&headers))
                    .unwrap()
            });
        },
    );

    for alg in [Algorithm::ES256, Algorithm::EdDSA] {
        let (token, jwk) = token(alg);
        let jwks = Jwks::with_keys(
            ISSUER,
            JwkSet {
                keys: vec![jwk.clone()],
            },
        );
        runtime
            .block_on(jwt::check(&token, &jwks, ISSUER, AUDIENCE))
            .expect("the token checks");
        group.bench_function(format!("check a {alg:?} access token"), |b| {
            b.iter(|| {
                runtime
                    .block_on(jwt::check(&token, &jwks, ISSUER, AUDIENCE))
                    .unwrap()
            });
        });
        let oauth = OAuth::with_jwks(
            Jwks::with_keys(ISSUER, JwkSet { keys: vec![jwk] }),
            OAuthOptions {
                issuer: ISSUER.to_owned(),
                audience: None,
                scopes: Vec::new(),
                jwks_refresh: reactor_mcp_server::internals::auth::DEFAULT_JWKS_REFRESH,
            },
        );
        runtime.block_on(oauth.identify(&token, AUDIENCE)).unwrap();
        group.bench_function(format!("identify a repeated {alg:?} access token"), |b| {
            b.iter(|| runtime.block_on(oauth.identify(&token, AUDIENCE)).unwrap());
        });
    }
    group.finish();
}

criterion_group!(benches, auth);
criterion_main!(benches);
