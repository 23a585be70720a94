//! Checking one JWT access token with `jsonwebtoken`: signed with a public-key algorithm
//! (RS*, PS*, ES256/384, EdDSA; `none` and HMAC are refused, so a public key can never serve as
//! a shared secret), by the issuer's key it names, not expired and already valid (with
//! `LEEWAY` for clocks that differ), from the issuer, and for this server (`aud`, RFC 8707).

use jsonwebtoken::{
    Algorithm, DecodingKey, Validation, decode, decode_header,
    errors::ErrorKind,
    jwk::{Jwk, KeyAlgorithm},
};
use serde::Deserialize;
use serde_json::Value;

use super::{
    identity::TokenClaims,
    jwks::{Jwks, JwksError},
};

/// Why an access token is refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// It is not a JWT with a header naming a signature algorithm.
    #[error("the token is not a signed JWT; unsigned tokens (alg `none`) are refused")]
    NotSigned(#[source] jsonwebtoken::errors::Error),
    /// It is signed with a shared secret (HMAC).
    #[error(
        "tokens signed with {0:?} are refused: only public-key algorithms (RS256, ES256, EdDSA, \
         ...) are accepted"
    )]
    SharedSecret(Algorithm),
    /// The issuer's key it names could not be had.
    #[error(transparent)]
    Key(#[from] JwksError),
    /// Its algorithm is not its key's.
    #[error("the token says {token:?} but its key is for {key:?}")]
    KeyAlgorithm {
        /// The token's algorithm.
        token: Algorithm,
        /// The key's.
        key: KeyAlgorithm,
    },
    /// The issuer's key does not read.
    #[error("the issuer's key does not read")]
    BadKey(#[source] jsonwebtoken::errors::Error),
    /// A claim or the signature does not hold; the reason says which.
    #[error("{0}")]
    Refused(String),
    /// It is not valid for another reason.
    #[error("the token is not valid")]
    Invalid(#[source] jsonwebtoken::errors::Error),
}

/// The clock difference tolerated on `exp` and `nbf`, in seconds.
pub(crate) const LEEWAY: u64 = 30;

/// The claims read from a token, once it is checked.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Claims {
    /// The subject: who the token is for.
    #[serde(default)]
    pub(crate) sub: Option<String>,
    /// The client the token was issued to (RFC 9068).
    #[serde(default)]
    pub(crate) client_id: Option<String>,
    /// The scopes, space-separated (RFC 8693, RFC 9068).
    #[serde(default)]
    pub(crate) scope: Option<String>,
    /// The scopes as a list (some issuers).
    #[serde(default)]
    pub(crate) scp: Option<Vec<String>>,
    /// When the token expires, in seconds since the epoch (whole seconds).
    #[serde(default, deserialize_with = "whole_seconds")]
    pub(crate) exp: Option<i64>,
    /// The other claims (`iss`, `aud`, `email`, `groups`, ...).
    #[serde(flatten)]
    pub(crate) other: serde_json::Map<String, serde_json::Value>,
}

/// A NumericDate (RFC 7519), which may have a fraction, as whole seconds.
fn whole_seconds<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<i64>, D::Error> {
    let date = Option::<f64>::deserialize(deserializer)?;
    // Saturating: a date beyond i64 is as good as never.
    #[allow(clippy::cast_possible_truncation)]
    Ok(date.map(|d| d.floor() as i64))
}

impl Claims {
    /// Who calls: the subject, else the client.
    pub(crate) fn name(&self) -> String {
        self.sub
            .clone()
            .or_else(|| self.client_id.clone())
            .unwrap_or_else(|| "unknown".to_owned())
    }

    /// Every claim, as the token has them.
    pub(crate) fn all(&self) -> TokenClaims {
        let mut values = self.other.clone();
        let named = [
            ("sub", self.sub.clone().map(Value::from)),
            ("client_id", self.client_id.clone().map(Value::from)),
            ("scope", self.scope.clone().map(Value::from)),
            ("scp", self.scp.clone().map(Value::from)),
            ("exp", self.exp.map(Value::from)),
        ];
        for (name, value) in named {
            if let Some(value) = value {
                values.insert(name.to_owned(), value);
            }
        }
        TokenClaims::new(values)
    }

    /// The scopes, from `scope` or `scp`.
    pub(crate) fn scopes(&self) -> Vec<String> {
        match (&self.scope, &self.scp) {
            (Some(scope), _) => scope.split_whitespace().map(str::to_owned).collect(),
            (None, Some(scp)) => scp.clone(),
            (None, None) => Vec::new(),
        }
    }
}

/// Checks `token` against the keys of `issuer` and the audience `audience`; the claims and the
/// key that signed them, or why the token is refused.
pub async fn check(
    token: &str,
    jwks: &Jwks,
    issuer: &str,
    audience: &str,
) -> Result<(Claims, Jwk), TokenError> {
    let header = decode_header(token).map_err(TokenError::NotSigned)?;
    if !is_public_key_algorithm(header.alg) {
        return Err(TokenError::SharedSecret(header.alg));
    }
    let jwk = jwks.key(header.kid.as_deref()).await?;
    let claims = verify(token, header.alg, &jwk, issuer, audience)?;
    Ok((claims, jwk))
}

/// Verifies `token`, signed with `alg`, with `jwk`.
fn verify(
    token: &str,
    alg: Algorithm,
    jwk: &Jwk,
    issuer: &str,
    audience: &str,
) -> Result<Claims, TokenError> {
    if let Some(key_alg) = jwk.common.key_algorithm
        && Algorithm::try_from(key_alg).ok() != Some(alg)
    {
        return Err(TokenError::KeyAlgorithm {
            token: alg,
            key: key_alg,
        });
    }
    let key = DecodingKey::from_jwk(jwk).map_err(TokenError::BadKey)?;
    let mut validation = Validation::new(alg);
    validation.leeway = LEEWAY;
    validation.validate_nbf = true;
    validation.set_issuer(&[issuer]);
    validation.set_audience(&[audience]);
    validation.set_required_spec_claims(&["exp", "iss", "aud"]);
    decode::<Claims>(token, &key, &validation)
        .map(|data| data.claims)
        .map_err(|e| {
            TokenError::Refused(match e.kind() {
                ErrorKind::ExpiredSignature => "the token expired".to_owned(),
                ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)".to_owned(),
                ErrorKind::InvalidIssuer => format!("the token's issuer (iss) is not {issuer}"),
                ErrorKind::InvalidAudience => {
                    format!("the token's audience (aud) is not this server, {audience}")
                }
                ErrorKind::InvalidSignature => "the token's signature does not verify".to_owned(),
                ErrorKind::InvalidAlgorithm => {
                    format!("the token's algorithm {alg:?} does not fit its key")
                }
                ErrorKind::MissingRequiredClaim(claim) => {
                    format!("the token has no `{claim}` claim")
                }
                _ => return TokenError::Invalid(e),
            })
        })
}

/// Whether `alg` verifies with a public key (not HMAC).
fn is_public_key_algorithm(alg: Algorithm) -> bool {
    !matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512)
}
