//! The issuer's signing keys: its metadata (RFC 8414, else OpenID Connect discovery) names its
//! JWKS, fetched at start-up and again every `--oauth-jwks-refresh` ([`Jwks::keep_fresh`]), so
//! a key the issuer drops stops being accepted. A token naming a key id the set lacks (the
//! issuer rotated its keys) fetches both again, at most once per [`REFETCH_AFTER`], so a flood
//! of tokens with made-up key ids cannot make the server hammer the issuer. A fetch that fails
//! keeps the keys held.

use std::{
    sync::{Arc, RwLock},
    time::{Duration, Instant},
};

use crate::util::{
    error::chain,
    lock::{read, write},
};
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, JwkSet};
use serde::Deserialize;

/// The least time between two fetches of the issuer's keys.
pub(crate) const REFETCH_AFTER: Duration = Duration::from_secs(5);

/// How long one fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// The part of the issuer's metadata read here.
#[derive(Debug, Deserialize)]
struct IssuerMetadata {
    issuer: String,
    jwks_uri: String,
}

/// Why the issuer's keys, or the key a token names, could not be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JwksError {
    /// No metadata URL gave the issuer's metadata; the last one's failure is the source.
    #[error("cannot read the metadata of the issuer {issuer}")]
    Metadata {
        /// The issuer.
        issuer: String,
        /// Why the last URL tried did not give it.
        source: Option<GetError>,
    },
    /// The metadata's `jwks_uri` did not give a key set.
    #[error("cannot fetch the signing keys of the issuer {issuer}")]
    Keys {
        /// The issuer.
        issuer: String,
        /// Why.
        source: GetError,
    },
    /// The last fetch failed; it is tried again once `REFETCH_AFTER` has passed.
    #[error(transparent)]
    Fetch(Arc<JwksError>),
    /// The keys have no key with this id.
    #[error("the issuer's keys have no key with id `{0}`")]
    UnknownKey(String),
    /// The token names no key id, and there is more than one key.
    #[error("the token names no key id (kid) and the issuer has more than one key")]
    NoKeyId,
}

/// Why one document of the issuer (its metadata, its key set) could not be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GetError {
    /// The request got no answer, or an answer that could not be read.
    #[error("GET {url}")]
    Request {
        /// The URL.
        url: String,
        /// The client's error.
        source: reqwest::Error,
    },
    /// The answer's status is not a success.
    #[error("GET {url}: {status}")]
    Status {
        /// The URL.
        url: String,
        /// The status.
        status: reqwest::StatusCode,
    },
    /// The answer is not the JSON expected.
    #[error("GET {url}: the answer does not read")]
    Body {
        /// The URL.
        url: String,
        /// The parser's error.
        source: serde_json::Error,
    },
    /// The metadata at `url` names another issuer.
    #[error("{url} names the issuer `{named}`, not `{issuer}`")]
    OtherIssuer {
        /// Where the metadata was read.
        url: String,
        /// The issuer it names.
        named: String,
        /// The issuer expected.
        issuer: String,
    },
}

/// The signing keys of one issuer, fetched on demand and kept.
#[derive(Debug)]
pub struct Jwks {
    issuer: String,
    http: reqwest::Client,
    keys: RwLock<Arc<JwkSet>>,
    /// When keys were last fetched (or tried), and why that failed if it did; held across a
    /// fetch so only one runs.
    fetched: tokio::sync::Mutex<Fetched>,
}

/// The last fetch of the keys.
#[derive(Debug, Default)]
struct Fetched {
    at: Option<Instant>,
    error: Option<Arc<JwksError>>,
}

impl Jwks {
    /// The keys of `issuer`, none fetched yet.
    pub(crate) fn new(issuer: &str) -> Self {
        crate::util::tls::install_crypto_provider();
        let http = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .build()
            .unwrap_or_default();
        Self {
            issuer: issuer.to_owned(),
            http,
            keys: RwLock::new(Arc::new(JwkSet { keys: Vec::new() })),
            fetched: tokio::sync::Mutex::default(),
        }
    }

    /// The keys of `issuer` given here, as a test or a benchmark holds them: they are fetched
    /// only for a key id they lack.
    pub fn with_keys(issuer: &str, keys: JwkSet) -> Self {
        let jwks = Self::new(issuer);
        *write(&jwks.keys) = Arc::new(keys);
        jwks
    }

    /// The key with id `kid` (the only key when the token names none), fetching the keys again
    /// when it is not known and the last fetch is older than [`REFETCH_AFTER`].
    pub(crate) async fn key(&self, kid: Option<&str>) -> Result<Jwk, JwksError> {
        if let Some(key) = self.find(kid) {
            return Ok(key);
        }
        let mut fetched = self.fetched.lock().await;
        if let Some(key) = self.find(kid) {
            return Ok(key);
        }
        if fetched.at.is_none_or(|at| at.elapsed() >= REFETCH_AFTER) {
            self.fetch_into(&mut fetched).await;
        }
        if let Some(error) = &fetched.error {
            return Err(JwksError::Fetch(Arc::clone(error)));
        }
        self.find(kid).ok_or_else(|| match kid {
            Some(kid) => JwksError::UnknownKey(kid.to_owned()),
            None => JwksError::NoKeyId,
        })
    }

    /// Fetches the keys now (at start-up, so the first request does not wait) and again every
    /// `every`, for as long as it runs; a failure is logged and keeps the keys held, and a
    /// token with an unknown key id tries again once [`REFETCH_AFTER`] has passed.
    pub(crate) async fn keep_fresh(self: Arc<Self>, every: Duration) {
        loop {
            self.fetch_into(&mut *self.fetched.lock().await).await;
            tokio::time::sleep(every).await;
        }
    }

    /// Whether `key` is among the keys held: a token it signed may be trusted without another
    /// check only while it is.
    pub(crate) fn holds(&self, key: &Jwk) -> bool {
        read(&self.keys).keys.contains(key)
    }

    /// Fetches the keys, records the fetch in `fetched` and keeps the new set, or logs why not.
    async fn fetch_into(&self, fetched: &mut Fetched) {
        fetched.at = Some(Instant::now());
        fetched.error = match self.fetch().await {
            Ok(set) => {
                let mut keys = write(&self.keys);
                if **keys != set {
                    tracing::info!(
                        "fetched {} signing key(s) of the issuer {}",
                        set.keys.len(),
                        self.issuer
                    );
                    *keys = Arc::new(set);
                }
                None
            }
            Err(error) => {
                tracing::warn!("{}", chain(&error));
                Some(Arc::new(error))
            }
        };
    }

    /// The key with id `kid`, or the only one when `kid` is `None`, among the keys held.
    fn find(&self, kid: Option<&str>) -> Option<Jwk> {
        let keys = read(&self.keys);
        let usable = keys.keys.iter().filter(|k| is_public_key(k));
        match kid {
            Some(kid) => usable
                .clone()
                .find(|k| k.common.key_id.as_deref() == Some(kid))
                .cloned(),
            None => {
                let mut all = usable;
                let first = all.next()?;
                all.next().is_none().then(|| first.clone())
            }
        }
    }

    /// The issuer's metadata, then its JWKS.
    async fn fetch(&self) -> Result<JwkSet, JwksError> {
        let mut last = None;
        for url in metadata_urls(&self.issuer) {
            match self.get_json::<IssuerMetadata>(&url).await {
                Ok(metadata)
                    if metadata.issuer.trim_end_matches('/')
                        == self.issuer.trim_end_matches('/') =>
                {
                    return self
                        .get_json::<JwkSet>(&metadata.jwks_uri)
                        .await
                        .map_err(|source| JwksError::Keys {
                            issuer: self.issuer.clone(),
                            source,
                        });
                }
                Ok(metadata) => {
                    last = Some(GetError::OtherIssuer {
                        url,
                        named: metadata.issuer,
                        issuer: self.issuer.clone(),
                    });
                }
                Err(error) => last = Some(error),
            }
        }
        Err(JwksError::Metadata {
            issuer: self.issuer.clone(),
            source: last,
        })
    }

    /// `GET url` as JSON of type `T`.
    async fn get_json<T: serde::de::DeserializeOwned>(&self, url: &str) -> Result<T, GetError> {
        let request = |source| GetError::Request {
            url: url.to_owned(),
            source,
        };
        let response = self
            .http
            .get(url)
            .header("accept", "application/json")
            .send()
            .await
            .map_err(request)?;
        let status = response.status();
        if !status.is_success() {
            return Err(GetError::Status {
                url: url.to_owned(),
                status,
            });
        }
        let body = response.bytes().await.map_err(request)?;
        serde_json::from_slice(&body).map_err(|source| GetError::Body {
            url: url.to_owned(),
            source,
        })
    }
}

/// Whether a key can verify a token: an RSA, EC or OKP public key (never a shared secret).
fn is_public_key(key: &Jwk) -> bool {
    matches!(
        key.algorithm,
        AlgorithmParameters::RSA(_)
            | AlgorithmParameters::EllipticCurve(_)
            | AlgorithmParameters::OctetKeyPair(_)
    )
}

/// Where the issuer's metadata may be: RFC 8414's well-known URL (its path after the
/// well-known part), then OpenID Connect's (appended to the issuer).
fn metadata_urls(issuer: &str) -> Vec<String> {
    let issuer = issuer.trim_end_matches('/');
    let (origin, path) = match issuer.find("://").map(|at| at + 3) {
        Some(start) => match issuer[start..].find('/') {
            Some(slash) => issuer.split_at(start + slash),
            None => (issuer, ""),
        },
        None => (issuer, ""),
    };
    vec![
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{issuer}/.well-known/openid-configuration"),
    ]
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[tokio::test]
    async fn a_failed_fetch_keeps_the_request_error_as_its_source() {
        let jwks = Jwks::new("http://127.0.0.1:1");
        let error = jwks.key(Some("k")).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "cannot read the metadata of the issuer http://127.0.0.1:1"
        );
        let last = error.source().expect("the last URL's failure");
        assert!(
            matches!(
                last.downcast_ref::<GetError>(),
                Some(GetError::Request { .. })
            ),
            "{last:?}"
        );
        assert!(last.source().is_some(), "the client's error is kept");
        let line = chain(&error);
        assert!(
            line.starts_with(
                "cannot read the metadata of the issuer http://127.0.0.1:1: GET \
                 http://127.0.0.1:1/.well-known/openid-configuration: "
            ),
            "{line}"
        );
    }

    #[test]
    fn metadata_urls_follow_rfc_8414_then_openid() {
        assert_eq!(
            metadata_urls("https://auth.example/"),
            [
                "https://auth.example/.well-known/oauth-authorization-server",
                "https://auth.example/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            metadata_urls("https://auth.example/tenant/1"),
            [
                "https://auth.example/.well-known/oauth-authorization-server/tenant/1",
                "https://auth.example/tenant/1/.well-known/openid-configuration"
            ]
        );
    }
}
