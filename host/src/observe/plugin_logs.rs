//! Plugins' own logs in the host's: each `tracing` event or `log` record a plugin forwards
//! (`plugin_abi::FfiLogEvent`) is written as a host `tracing` event, with target
//! `plugin::NAME`, the plugin's fields as fields of its own, and a `plugin` field naming it,
//! inside whatever span is entered (a call's). So `RUST_LOG` filters it like any other target
//! (`plugin=debug`, `plugin::echo=trace`), and `--log-format json` writes it with its span.
//!
//! `tracing` needs a static callsite per event shape: each distinct (plugin, target, level,
//! field names) gets one, made once and leaked, which is bounded by the plugin's own callsites.
//! Beyond [`MAX_CALLSITES`] (a plugin making field names at run time), events share one
//! callsite per level that carries their fields as one JSON text.
//!
//! [`sink`] is what the host hands a library for events outside any call; a call's
//! `HostContext` calls [`emit`] inside its span. In an isolated plugin's child, the sink's
//! events go to the parent instead ([`await_parent`], [`to_parent`]), which writes them.

use std::{
    collections::HashMap,
    sync::{Arc, OnceLock, RwLock},
};

use abi_stable::{
    sabi_trait::TD_Opaque,
    std_types::{RArc, RStr},
};
use plugin_abi::{FfiLogEvent, LogSink, LogSinkBox, TraceLevel};
use serde_json::Value;
use tracing::{
    Level, Metadata,
    callsite::{Callsite, Identifier},
    field::FieldSet,
    level_filters::LevelFilter,
    metadata::Kind,
    subscriber::Interest,
};

/// How many callsites plugins' events may make before they share one per level.
pub(crate) const MAX_CALLSITES: usize = 4096;

/// The field that names the plugin.
const PLUGIN_FIELD: &str = "plugin";

/// The field of a shared callsite that carries the other fields as JSON text.
const FIELDS_FIELD: &str = "fields";

/// The level the host's log keeps at most, as a plugin is told it: no plugin formats an event
/// below it.
pub(crate) fn max_level() -> TraceLevel {
    match LevelFilter::current().into_level() {
        None => TraceLevel::Off,
        Some(Level::ERROR) => TraceLevel::Error,
        Some(Level::WARN) => TraceLevel::Warn,
        Some(Level::INFO) => TraceLevel::Info,
        Some(Level::DEBUG) => TraceLevel::Debug,
        Some(_) => TraceLevel::Trace,
    }
}

/// The sink handed to plugin `plugin`'s library: its events outside any call.
pub(crate) fn sink(plugin: &str) -> LogSinkBox {
    LogSinkBox::from_ptr(RArc::new(Sink(Arc::from(plugin))), TD_Opaque)
}

/// A plugin's sink: writes its events under its name, in whatever span is current.
struct Sink(Arc<str>);

impl LogSink for Sink {
    fn max_level(&self) -> u8 {
        max_level() as u8
    }

    fn event(&self, event: FfiLogEvent<'_>) {
        let mut route = crate::util::lock::lock(&ROUTE);
        match &mut *route {
            Route::Here => {
                drop(route);
                emit(&self.0, event);
            }
            Route::Waiting(waiting) => {
                if waiting.len() < MAX_WAITING {
                    waiting.push(Owned::of(event));
                }
            }
            Route::Parent(send) => send(event),
        }
    }
}

/// How many events of an isolated plugin's child wait for its link to the parent; later ones
/// are dropped.
const MAX_WAITING: usize = 256;

/// Sends one of the plugin's events to an isolated plugin's parent.
pub(crate) type ToParent = Box<dyn Fn(FfiLogEvent<'_>) + Send + Sync>;

/// Where the sinks' events go.
enum Route {
    /// This process's log.
    Here,
    /// The parent's, once its link is known ([`to_parent`]): kept until then.
    Waiting(Vec<Owned>),
    /// The parent's.
    Parent(ToParent),
}

static ROUTE: std::sync::Mutex<Route> = std::sync::Mutex::new(Route::Here);

/// In an isolated plugin's child, before its library is opened: the plugin's events from
/// outside any call are for the parent, and wait for [`to_parent`].
pub(crate) fn await_parent() {
    *crate::util::lock::lock(&ROUTE) = Route::Waiting(Vec::new());
}

/// Sends the plugin's events from outside any call to the parent with `send`, those that
/// waited first.
pub(crate) fn to_parent(send: ToParent) {
    let mut route = crate::util::lock::lock(&ROUTE);
    if let Route::Waiting(waiting) = &*route {
        for event in waiting {
            send(event.event());
        }
    }
    *route = Route::Parent(send);
}

/// An event kept while it waits.
struct Owned {
    level: u8,
    target: String,
    message: String,
    fields_json: String,
}

impl Owned {
    fn of(event: FfiLogEvent<'_>) -> Self {
        Self {
            level: event.level,
            target: event.target.into(),
            message: event.message.into(),
            fields_json: event.fields_json.into(),
        }
    }

    fn event(&self) -> FfiLogEvent<'_> {
        FfiLogEvent {
            plugin: "".into(),
            level: self.level,
            target: self.target.as_str().into(),
            message: self.message.as_str().into(),
            fields_json: self.fields_json.as_str().into(),
        }
    }
}

/// Writes plugin `plugin`'s `event` to the host's log, in the current span (`event.plugin` is
/// not read: the caller knows whose the event is).
pub(crate) fn emit(plugin: &str, event: FfiLogEvent<'_>) {
    let level = match TraceLevel::from_u8(event.level) {
        TraceLevel::Off => return,
        TraceLevel::Error => Level::ERROR,
        TraceLevel::Warn => Level::WARN,
        TraceLevel::Info => Level::INFO,
        TraceLevel::Debug => Level::DEBUG,
        TraceLevel::Trace => Level::TRACE,
    };
    let fields: serde_json::Map<String, Value> =
        serde_json::from_str(event.fields_json.as_str()).unwrap_or_default();
    let names: Vec<&str> = fields.keys().map(String::as_str).collect();
    let shape = Shape {
        plugin,
        target: event.target.as_str(),
        level,
        names: &names,
    };
    match callsite(&shape) {
        Some(callsite) => dispatch(callsite, event.message, |name| {
            if name == PLUGIN_FIELD {
                Some(FieldValue::Str(plugin))
            } else {
                fields.get(name).map(FieldValue::of)
            }
        }),
        None => {
            let json = Value::Object(fields.clone()).to_string();
            dispatch(shared(level), event.message, |name| match name {
                PLUGIN_FIELD => Some(FieldValue::Str(plugin)),
                FIELDS_FIELD => Some(FieldValue::Str(&json)),
                _ => None,
            })
        }
    }
}

/// Dispatches an event of `callsite` with `message` and the value `value_of` gives each
/// other field, if the host's subscriber wants it.
fn dispatch<'v>(
    callsite: &'static PluginCallsite,
    message: RStr<'_>,
    value_of: impl Fn(&str) -> Option<FieldValue<'v>>,
) {
    let metadata = callsite.metadata();
    tracing::dispatcher::get_default(|dispatch| {
        if !dispatch.enabled(metadata) {
            return;
        }
        let message = tracing::field::display(message.as_str());
        let values: Vec<Option<FieldValue<'_>>> = metadata
            .fields()
            .iter()
            .map(|field| match field.name() {
                "message" => None,
                name => value_of(name),
            })
            .collect();
        let erased: Vec<Option<&dyn tracing::Value>> = metadata
            .fields()
            .iter()
            .zip(&values)
            .map(|(field, value)| match field.name() {
                "message" => Some(&message as &dyn tracing::Value),
                _ => value.as_ref().map(FieldValue::as_value),
            })
            .collect();
        let values = metadata.fields().value_set_all(&erased);
        dispatch.event(&tracing::Event::new(metadata, &values));
    });
}

/// A plugin's field value, as `tracing` records it.
enum FieldValue<'a> {
    Str(&'a str),
    Bool(bool),
    I64(i64),
    U64(u64),
    F64(f64),
    /// Arrays, objects and null, as their JSON text.
    Json(String),
}

impl<'a> FieldValue<'a> {
    fn of(value: &'a Value) -> Self {
        match value {
            Value::String(text) => Self::Str(text),
            Value::Bool(b) => Self::Bool(*b),
            Value::Number(n) => n
                .as_i64()
                .map(Self::I64)
                .or_else(|| n.as_u64().map(Self::U64))
                .unwrap_or_else(|| Self::F64(n.as_f64().unwrap_or_default())),
            other => Self::Json(other.to_string()),
        }
    }

    fn as_value(&self) -> &dyn tracing::Value {
        match self {
            Self::Str(text) => text,
            Self::Bool(b) => b,
            Self::I64(n) => n,
            Self::U64(n) => n,
            Self::F64(n) => n,
            Self::Json(text) => text,
        }
    }
}

/// What makes an event's callsite: whose, where, how severe, which fields.
#[derive(Clone, Copy)]
struct Shape<'a> {
    plugin: &'a str,
    target: &'a str,
    level: Level,
    names: &'a [&'a str],
}

type Key = (String, String, Level, Vec<String>);

impl Shape<'_> {
    fn key(&self) -> Key {
        (
            self.plugin.to_owned(),
            self.target.to_owned(),
            self.level,
            self.names.iter().map(|n| (*n).to_owned()).collect(),
        )
    }
}

/// A callsite made at run time for plugins' events.
struct PluginCallsite {
    metadata: OnceLock<Metadata<'static>>,
}

impl Callsite for PluginCallsite {
    fn set_interest(&self, _interest: Interest) {}

    fn metadata(&self) -> &Metadata<'_> {
        self.metadata
            .get()
            .expect("a plugin callsite's metadata is set before it is registered")
    }
}

/// The callsites made so far.
static CALLSITES: RwLock<Option<HashMap<Key, &'static PluginCallsite>>> = RwLock::new(None);

/// The callsite of events of `shape`, made on first use; `None` once [`MAX_CALLSITES`] are.
fn callsite(shape: &Shape<'_>) -> Option<&'static PluginCallsite> {
    let key = shape.key();
    if let Some(found) = crate::util::lock::read(&CALLSITES)
        .as_ref()
        .and_then(|known| known.get(&key))
    {
        return Some(found);
    }
    let mut known = crate::util::lock::write(&CALLSITES);
    let known = known.get_or_insert_with(HashMap::new);
    if let Some(found) = known.get(&key) {
        return Some(found);
    }
    if known.len() >= MAX_CALLSITES {
        return None;
    }
    let mut names: Vec<&'static str> = vec!["message"];
    names.extend(
        shape
            .names
            .iter()
            .filter(|n| **n != "message" && **n != PLUGIN_FIELD)
            .map(|n| leak(n)),
    );
    names.push(PLUGIN_FIELD);
    let target = leak(&format!("plugin::{}", shape.plugin));
    let module = leak(shape.target);
    let made = make(target, Some(module), shape.level, names.leak());
    known.insert(key, made);
    Some(made)
}

/// The callsite of level `level` that events share beyond [`MAX_CALLSITES`].
fn shared(level: Level) -> &'static PluginCallsite {
    static SHARED: OnceLock<[&'static PluginCallsite; 5]> = OnceLock::new();
    let all = SHARED.get_or_init(|| {
        [
            Level::ERROR,
            Level::WARN,
            Level::INFO,
            Level::DEBUG,
            Level::TRACE,
        ]
        .map(|level| {
            make(
                "plugin",
                None,
                level,
                &["message", FIELDS_FIELD, PLUGIN_FIELD],
            )
        })
    });
    let index = match level {
        Level::ERROR => 0,
        Level::WARN => 1,
        Level::INFO => 2,
        Level::DEBUG => 3,
        _ => 4,
    };
    all[index]
}

/// A new callsite, registered with `tracing`.
fn make(
    target: &'static str,
    module: Option<&'static str>,
    level: Level,
    names: &'static [&'static str],
) -> &'static PluginCallsite {
    let callsite: &'static PluginCallsite = Box::leak(Box::new(PluginCallsite {
        metadata: OnceLock::new(),
    }));
    let fields = FieldSet::new(names, Identifier(callsite));
    let _ = callsite.metadata.set(Metadata::new(
        "plugin event",
        target,
        level,
        None,
        None,
        module,
        fields,
        Kind::EVENT,
    ));
    tracing::callsite::register(callsite);
    callsite
}

fn leak(text: &str) -> &'static str {
    Box::leak(text.to_owned().into_boxed_str())
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Mutex;

    use tracing_subscriber::layer::SubscriberExt as _;

    use super::*;

    /// A writer the test reads back.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            crate::util::lock::lock(&self.0).extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
        type Writer = Self;

        fn make_writer(&'a self) -> Self::Writer {
            self.clone()
        }
    }

    fn event<'a>(level: TraceLevel, message: &'a str, fields: &'a str) -> FfiLogEvent<'a> {
        FfiLogEvent {
            plugin: "liar".into(),
            level: level as u8,
            target: "fixture_logs::tools".into(),
            message: message.into(),
            fields_json: fields.into(),
        }
    }

    /// The JSON lines the host's log (its format, filtered by `filter`) gets while `f` runs.
    pub(crate) fn json_lines(filter: &str, f: impl FnOnce()) -> Vec<Value> {
        let out = Captured::default();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_subscriber::EnvFilter::new(filter))
            .with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .with_current_span(true)
                    .with_writer(out.clone()),
            );
        tracing::subscriber::with_default(subscriber, f);
        let text = String::from_utf8(crate::util::lock::lock(&out.0).clone()).unwrap();
        text.lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    #[test]
    fn an_event_is_written_under_the_plugins_target_with_its_fields_in_the_span() {
        let lines = json_lines("info", || {
            let span = tracing::info_span!("call", tool = "count");
            let _entered = span.enter();
            emit(
                "counter",
                event(
                    TraceLevel::Info,
                    "counting",
                    r#"{"n":3,"ok":true,"who":"me"}"#,
                ),
            );
            emit("counter", event(TraceLevel::Debug, "too verbose", "{}"));
        });
        assert_eq!(lines.len(), 1, "{lines:?}");
        let line = &lines[0];
        assert_eq!(line["target"], "plugin::counter");
        assert_eq!(line["level"], "INFO");
        assert_eq!(
            line["fields"],
            serde_json::json!({"message": "counting", "n": 3, "ok": true, "who": "me",
                               "plugin": "counter"})
        );
        assert_eq!(line["span"]["name"], "call");
        assert_eq!(line["span"]["tool"], "count");
    }

    #[test]
    fn rust_log_filters_plugins_by_target() {
        let lines = json_lines("warn,plugin::chatty=debug", || {
            emit("chatty", event(TraceLevel::Debug, "kept", "{}"));
            emit("quiet", event(TraceLevel::Info, "dropped", "{}"));
            emit("quiet", event(TraceLevel::Warn, "kept too", "{}"));
        });
        let messages: Vec<&Value> = lines.iter().map(|l| &l["fields"]["message"]).collect();
        assert_eq!(messages, ["kept", "kept too"]);
    }

    #[test]
    fn a_plugins_own_plugin_field_does_not_hide_its_name() {
        let lines = json_lines("info", || {
            emit(
                "real",
                event(TraceLevel::Info, "hi", r#"{"plugin":"fake"}"#),
            );
        });
        assert_eq!(lines[0]["fields"]["plugin"], "real");
    }
}
