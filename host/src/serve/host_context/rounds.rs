//! Input-required rounds (protocol 2026-07-28, SEP-2322): the answers a call can use, and the
//! state that carries them from one round to the next.
//!
//! A 2026-07-28 client cannot be sent requests. When a tool asks for input the call has no
//! answer to, the host ends the call with an input-required result listing what is missing
//! under its keys, and a `requestState`: every answer used so far, sealed with an HMAC and
//! bound to the method, the tool or prompt, its arguments and the caller, for an hour. The
//! client calls again with the new answers (`inputResponses`) and the state; the tool runs
//! again from the start, and each of its requests is answered from the state or the new
//! answers. State that fails verification is refused (`-32602`); an answer that is not the
//! result its request calls for counts as missing and is asked again.

// Sampling and roots are deprecated by SEP-2577, and still inputs a 2026-07-28 tool may ask for.
#![allow(deprecated)]

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use rmcp::{
    ErrorData,
    model::{
        CreateMessageResult, ElicitResult, InputRequest, InputRequests, InputResponses,
        ListRootsResult, RequestStateCodec, SealOptions, ServerRequest,
    },
};
use serde_json::Value;

/// How long a sealed state may be echoed back: time enough for a person to answer.
const STATE_TTL: Duration = Duration::from_secs(3600);

/// The environment variable holding the key states are sealed with, for servers behind a load
/// balancer that must open each other's states; a random key per process otherwise.
pub(crate) const KEY_VARIABLE: &str = "REACTOR_MCP_REQUEST_STATE_KEY";

/// Seals and opens request states.
pub struct Sealer(RequestStateCodec);

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer")
    }
}

impl Sealer {
    /// A sealer with the key of [`KEY_VARIABLE`], or a random one; a key shorter than 32 bytes
    /// is refused, naming the variable.
    pub(crate) fn from_env() -> Result<Self, crate::serve::ServeError> {
        match std::env::var(KEY_VARIABLE) {
            Ok(key) => RequestStateCodec::try_new(key.into_bytes())
                .map(Self)
                .map_err(|source| crate::serve::ServeError::SealingKey {
                    variable: KEY_VARIABLE,
                    source,
                }),
            Err(_) => Ok(Self::random()),
        }
    }

    /// A sealer with a random key.
    pub fn random() -> Self {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).expect("the operating system's random source");
        Self(RequestStateCodec::try_new(key.to_vec()).expect("a 32-byte key is long enough"))
    }
}

/// What a sealed state is bound to: the request it continues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding(String);

impl Binding {
    /// The binding of `method` for `name` with `arguments`, called by `caller` (`None`
    /// without authentication).
    pub fn new(method: &str, name: &str, arguments: &Value, caller: Option<&str>) -> Self {
        Self(format!(
            "{method}\n{name}\n{arguments}\n{}",
            caller.unwrap_or_default()
        ))
    }
}

/// The answers one round of a call can use, and what the call asked.
#[derive(Debug, Default)]
pub struct Round {
    /// Answers from the state and from this request (or gathered on a session), by key.
    known: Mutex<BTreeMap<String, Value>>,
    /// The answers the call used, by key: what the next state carries.
    used: Mutex<BTreeMap<String, Value>>,
}

impl Round {
    /// The round of a request carrying `state` (sealed by an earlier round) and `responses`;
    /// fails with `-32602` when the state does not open for `binding`.
    pub fn open(
        sealer: &Sealer,
        binding: &Binding,
        state: Option<&str>,
        responses: Option<InputResponses>,
    ) -> Result<Arc<Self>, ErrorData> {
        let mut known: BTreeMap<String, Value> = match state {
            None => BTreeMap::new(),
            Some(sealed) => sealer
                .0
                .open_json_with(sealed, binding.0.as_bytes())
                .map_err(|e| {
                    ErrorData::invalid_params(
                        format!("requestState refused: {e}; call again without it"),
                        None,
                    )
                })?,
        };
        known.extend(responses.unwrap_or_default());
        Ok(Arc::new(Self {
            known: Mutex::new(known),
            used: Mutex::default(),
        }))
    }

    /// A round that starts empty and keeps what the client answers on a session
    /// ([`Round::record`]): what an `input_first` task call gathered before it became a task.
    pub(crate) fn gathering() -> Arc<Self> {
        Arc::default()
    }

    /// Keeps `answers`, which the client gave on its session.
    pub(crate) fn record(&self, answers: &serde_json::Map<String, Value>) {
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        known.extend(answers.iter().map(|(k, v)| (k.clone(), v.clone())));
    }

    /// The answers to `requests` (key, method), if every one has a valid answer.
    pub fn answers(&self, requests: &[(String, &str)]) -> Option<serde_json::Map<String, Value>> {
        let mut answers = serde_json::Map::new();
        let known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        for (key, method) in requests {
            let answer = known.get(key).filter(|a| answers_method(method, a))?;
            answers.insert(key.clone(), answer.clone());
        }
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        used.extend(answers.iter().map(|(k, v)| (k.clone(), v.clone())));
        Some(answers)
    }

    /// The state for the next round: the answers used, sealed for `binding`.
    pub fn seal(&self, sealer: &Sealer, binding: &Binding) -> String {
        let used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        sealer
            .0
            .seal_json_with(
                &*used,
                &SealOptions::new()
                    .associated_data(binding.0.as_bytes())
                    .ttl(STATE_TTL),
            )
            .expect("a map of JSON values serialises")
    }
}

/// Whether `answer` is the result `method` calls for.
fn answers_method(method: &str, answer: &Value) -> bool {
    let fits = |answer: &Value| match method {
        "elicitation/create" => serde_json::from_value::<ElicitResult>(answer.clone()).is_ok(),
        "sampling/createMessage" => {
            serde_json::from_value::<CreateMessageResult>(answer.clone()).is_ok()
        }
        "roots/list" => serde_json::from_value::<ListRootsResult>(answer.clone()).is_ok(),
        _ => false,
    };
    answer.is_object() && fits(answer)
}

/// The input request a client request becomes in an input-required result.
pub(crate) fn input_request(request: ServerRequest) -> Option<InputRequest> {
    match request {
        ServerRequest::CreateMessageRequest(r) => Some(InputRequest::CreateMessage(r)),
        ServerRequest::ElicitRequest(r) => Some(InputRequest::Elicitation(r)),
        ServerRequest::ListRootsRequest(r) => Some(InputRequest::ListRoots(r)),
        _ => None,
    }
}

/// What a call still needs: its input requests, by key.
pub(crate) type Missing = InputRequests;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn elicited() -> Value {
        json!({"action": "accept", "content": {"name": "Ada"}})
    }

    #[test]
    fn answers_come_from_the_request_then_from_the_state_they_were_sealed_in() {
        let sealer = Sealer::random();
        let binding = Binding::new("tools/call", "greet", &json!({}), None);
        let first = Round::open(
            &sealer,
            &binding,
            None,
            Some(BTreeMap::from([("name".to_owned(), elicited())])),
        )
        .unwrap();
        let asked = [("name".to_owned(), "elicitation/create")];
        assert_eq!(first.answers(&asked).unwrap()["name"], elicited());
        let both = [
            ("name".to_owned(), "elicitation/create"),
            ("roots".to_owned(), "roots/list"),
        ];
        assert!(first.answers(&both).is_none());
        let state = first.seal(&sealer, &binding);

        let roots = json!({"roots": [{"uri": "file:///tmp"}]});
        let second = Round::open(
            &sealer,
            &binding,
            Some(&state),
            Some(BTreeMap::from([("roots".to_owned(), roots.clone())])),
        )
        .unwrap();
        let answers = second.answers(&both).unwrap();
        assert_eq!((&answers["name"], &answers["roots"]), (&elicited(), &roots));
    }

    #[test]
    fn tampered_state_or_state_of_another_call_is_refused() {
        let sealer = Sealer::random();
        let binding = Binding::new("tools/call", "greet", &json!({}), None);
        let round = Round::open(&sealer, &binding, None, None).unwrap();
        let state = round.seal(&sealer, &binding);
        let tampered = format!("{state}-TAMPERED");
        let error = Round::open(&sealer, &binding, Some(&tampered), None).unwrap_err();
        assert!(
            error.message.starts_with("requestState refused"),
            "{error:?}"
        );
        let other = Binding::new("tools/call", "greet", &json!({"a": 1}), None);
        assert!(Round::open(&sealer, &other, Some(&state), None).is_err());
        let stranger = Binding::new("tools/call", "greet", &json!({}), Some("mallory"));
        assert!(Round::open(&sealer, &stranger, Some(&state), None).is_err());
        assert!(Round::open(&Sealer::random(), &binding, Some(&state), None).is_err());
    }

    #[test]
    fn an_answer_that_is_not_its_requests_result_counts_as_missing() {
        let sealer = Sealer::random();
        let binding = Binding::new("tools/call", "greet", &json!({}), None);
        let responses = BTreeMap::from([
            ("name".to_owned(), json!(12345)),
            ("model".to_owned(), elicited()),
        ]);
        let round = Round::open(&sealer, &binding, None, Some(responses)).unwrap();
        assert!(
            round
                .answers(&[("name".to_owned(), "elicitation/create")])
                .is_none()
        );
        assert!(
            round
                .answers(&[("model".to_owned(), "sampling/createMessage")])
                .is_none()
        );
    }
}
