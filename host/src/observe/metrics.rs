//! The server's metrics, in one Prometheus registry, named as the OpenTelemetry conventions name
//! them and mapped to Prometheus names as its exporters do (`mcp.server.operation.duration` in
//! seconds is `mcp_server_operation_duration_seconds`, attribute `mcp.method.name` the label
//! `mcp_method_name`).
//!
//! Labels stay few: methods, tool and prompt names (a served tool's name, never an unknown one),
//! plugin and server names, reasons, protocol versions; never arguments, session ids or URIs.
//! Recording goes through [`get`], `None` until [`install`]: a server without `--metrics-addr`
//! pays one atomic load per event.

use std::{sync::OnceLock, time::Duration};

use prometheus_client::{
    encoding::{EncodeLabelSet, LabelSetEncoder, text::encode},
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::{Registry, Unit},
};

/// The metrics, once installed.
static METRICS: OnceLock<Metrics> = OnceLock::new();

/// The buckets, in seconds, of the MCP conventions' duration histograms.
pub(crate) const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// The Content-Type of [`Metrics::render`]'s text.
pub(crate) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The metrics, when they are on.
pub(crate) fn get() -> Option<&'static Metrics> {
    METRICS.get()
}

/// Turns the metrics on, for the rest of the process; the ones already on when called again.
pub(crate) fn install() -> &'static Metrics {
    METRICS.get_or_init(Metrics::new)
}

/// One MCP request as the conventions' `mcp.server.operation.duration` labels it; an absent
/// attribute is no label.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub(crate) struct Operation {
    /// `mcp.method.name`.
    pub(crate) mcp_method_name: &'static str,
    /// `gen_ai.tool.name`, for `tools/call` of a served tool.
    pub(crate) gen_ai_tool_name: Option<String>,
    /// `gen_ai.prompt.name`, for `prompts/get` of a served prompt.
    pub(crate) gen_ai_prompt_name: Option<String>,
    /// `error.type`: `tool_error` for a result with `isError`, else the JSON-RPC error code.
    pub(crate) error_type: Option<String>,
    /// `mcp.protocol.version`.
    pub(crate) mcp_protocol_version: Option<&'static str>,
    /// `network.transport`: `tcp` over HTTP, `pipe` over stdio.
    pub(crate) network_transport: &'static str,
}

impl EncodeLabelSet for Operation {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
        let labels = [
            ("mcp_method_name", Some(self.mcp_method_name)),
            ("gen_ai_tool_name", self.gen_ai_tool_name.as_deref()),
            ("gen_ai_prompt_name", self.gen_ai_prompt_name.as_deref()),
            ("error_type", self.error_type.as_deref()),
            ("mcp_protocol_version", self.mcp_protocol_version),
            ("network_transport", Some(self.network_transport)),
        ];
        let present: Vec<(&str, &str)> = labels
            .into_iter()
            .filter_map(|(key, value)| Some((key, value?)))
            .collect();
        present.encode(encoder)
    }
}

/// One ended session, as `mcp.server.session.duration` labels it.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct Session {
    /// `network.transport`.
    pub(crate) network_transport: &'static str,
}

/// A plugin, and how it is provided (`library`, `isolated`, `bridged`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct Plugin {
    /// Its name.
    pub(crate) plugin: String,
    /// `library`, `isolated` or `bridged`.
    pub(crate) provider: &'static str,
}

/// A plugin by name alone.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct PluginName {
    /// Its name.
    pub(crate) plugin: String,
}

/// Why something failed, in a word.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct Reason {
    /// The reason.
    pub(crate) reason: &'static str,
}

/// Every metric the server keeps.
#[derive(Debug)]
pub(crate) struct Metrics {
    registry: Registry,
    /// `mcp.server.operation.duration`.
    pub(crate) operations: Family<Operation, Histogram>,
    /// `mcp.server.session.duration`.
    pub(crate) sessions_ended: Family<Session, Histogram>,
    /// Sessions open now.
    pub(crate) sessions_open: Gauge,
    /// Plugins opened, and the time each took.
    pub(crate) plugins_opened: Family<Plugin, Counter>,
    /// How long opening a plugin took.
    pub(crate) plugin_open_duration: Family<Plugin, Histogram>,
    /// Plugins that failed to open.
    pub(crate) plugin_open_failures: Family<Plugin, Counter>,
    /// Tool calls running now, per plugin.
    pub(crate) calls_in_flight: Family<PluginName, Gauge>,
    /// Generations made (hot reload and plugins turning tools off).
    pub(crate) generations: Counter,
    /// Scans of the plugin folder that failed.
    pub(crate) reload_failures: Counter,
    /// Processes started (isolated plugins' children, bridged servers).
    pub(crate) processes_started: Family<Plugin, Counter>,
    /// Processes that ended without being asked to.
    pub(crate) processes_crashed: Family<Plugin, Counter>,
    /// Processes parked: not started again until their backoff has passed.
    pub(crate) processes_parked: Family<Plugin, Counter>,
    /// How long a call to a bridged server took, per server.
    pub(crate) bridged_calls: Family<PluginName, Histogram>,
    /// Requests refused for their credentials, per reason.
    pub(crate) auth_failures: Family<Reason, Counter>,
    /// Calls the policy refused, per reason.
    pub(crate) policy_denials: Family<Reason, Counter>,
    /// Whether a plugin's circuit breaker is open (1) or closed (0).
    pub(crate) breakers_open: Family<PluginName, Gauge>,
}

/// A histogram over [`DURATION_BUCKETS`].
fn durations() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

impl Metrics {
    /// Every metric at zero, registered.
    fn new() -> Self {
        let mut registry = Registry::default();
        let metrics = Self {
            operations: Family::new_with_constructor(durations),
            sessions_ended: Family::new_with_constructor(durations),
            sessions_open: Gauge::default(),
            plugins_opened: Family::default(),
            plugin_open_duration: Family::new_with_constructor(durations),
            plugin_open_failures: Family::default(),
            calls_in_flight: Family::default(),
            generations: Counter::default(),
            reload_failures: Counter::default(),
            processes_started: Family::default(),
            processes_crashed: Family::default(),
            processes_parked: Family::default(),
            bridged_calls: Family::new_with_constructor(durations),
            auth_failures: Family::default(),
            policy_denials: Family::default(),
            breakers_open: Family::default(),
            registry: Registry::default(),
        };
        registry.register_with_unit(
            "mcp_server_operation_duration",
            "The duration of MCP requests the server answered (mcp.server.operation.duration)",
            Unit::Seconds,
            metrics.operations.clone(),
        );
        registry.register_with_unit(
            "mcp_server_session_duration",
            "The duration of MCP sessions that ended (mcp.server.session.duration)",
            Unit::Seconds,
            metrics.sessions_ended.clone(),
        );
        registry.register(
            "reactor_sessions_open",
            "MCP sessions open now",
            metrics.sessions_open.clone(),
        );
        registry.register(
            "reactor_plugins_opened",
            "Plugins opened, per plugin and provider",
            metrics.plugins_opened.clone(),
        );
        registry.register_with_unit(
            "reactor_plugin_open_duration",
            "How long opening a plugin took (the private copy, the load, the checks, a process's start)",
            Unit::Seconds,
            metrics.plugin_open_duration.clone(),
        );
        registry.register(
            "reactor_plugin_open_failures",
            "Plugins that failed to open, per plugin and provider",
            metrics.plugin_open_failures.clone(),
        );
        registry.register(
            "reactor_calls_in_flight",
            "Tool calls running now, per plugin",
            metrics.calls_in_flight.clone(),
        );
        registry.register(
            "reactor_generations",
            "Generations made: hot reload, and plugins turning contributions off and on",
            metrics.generations.clone(),
        );
        registry.register(
            "reactor_reload_failures",
            "Scans of the plugin folder that failed (the server kept its generation)",
            metrics.reload_failures.clone(),
        );
        registry.register(
            "reactor_processes_started",
            "Processes started: isolated plugins' children and bridged servers",
            metrics.processes_started.clone(),
        );
        registry.register(
            "reactor_processes_crashed",
            "Processes that ended without being asked to",
            metrics.processes_crashed.clone(),
        );
        registry.register(
            "reactor_processes_parked",
            "Times a process was parked: not started again until its backoff passes",
            metrics.processes_parked.clone(),
        );
        registry.register_with_unit(
            "reactor_bridged_call_duration",
            "How long a call to a bridged MCP server took, per server",
            Unit::Seconds,
            metrics.bridged_calls.clone(),
        );
        registry.register(
            "reactor_auth_failures",
            "Requests refused for their credentials, per reason",
            metrics.auth_failures.clone(),
        );
        registry.register(
            "reactor_policy_denials",
            "Calls the policy refused, per reason (rule, rate_limited, quota_exhausted, busy, \
             breaker_open, sessions)",
            metrics.policy_denials.clone(),
        );
        registry.register(
            "reactor_breaker_open",
            "Whether a plugin's circuit breaker is open (1) or closed (0)",
            metrics.breakers_open.clone(),
        );
        Self {
            registry,
            ..metrics
        }
    }

    /// The registry in the OpenMetrics text format ([`CONTENT_TYPE`]).
    pub(crate) fn render(&self) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        text
    }

    /// Records one MCP request.
    pub(crate) fn operation(&self, operation: &Operation, took: Duration) {
        self.operations
            .get_or_create(operation)
            .observe(took.as_secs_f64());
    }
}

/// Records that the plugin `name`, provided as `provider` ([`Plugin::provider`]), was opened
/// (`opened`) or failed to open, after `took`.
pub(crate) fn plugin_opened(name: &str, provider: &'static str, opened: bool, took: Duration) {
    let Some(metrics) = get() else { return };
    let plugin = Plugin {
        plugin: name.to_owned(),
        provider,
    };
    if opened {
        metrics.plugins_opened.get_or_create(&plugin).inc();
        (metrics.plugin_open_duration.get_or_create(&plugin)).observe(took.as_secs_f64());
    } else {
        metrics.plugin_open_failures.get_or_create(&plugin).inc();
    }
}

/// Counts `event` of the process of the plugin `name` (`isolated_library` or `mcp_server` as
/// `provider`).
pub(crate) fn process_event(name: &str, provider: &'static str, event: ProcessEvent) {
    let Some(metrics) = get() else { return };
    let family = match event {
        ProcessEvent::Started => &metrics.processes_started,
        ProcessEvent::Crashed => &metrics.processes_crashed,
        ProcessEvent::Parked => &metrics.processes_parked,
    };
    family
        .get_or_create(&Plugin {
            plugin: name.to_owned(),
            provider,
        })
        .inc();
}

/// What happened to a plugin's process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProcessEvent {
    /// It started and answered `initialize`.
    Started,
    /// It ended without being asked to, or did not start.
    Crashed,
    /// It failed too many times in a row and is left alone for a while.
    Parked,
}

/// Records a call to the bridged server `name` that took `took`.
pub(crate) fn bridged_call(name: &str, took: Duration) {
    let Some(metrics) = get() else { return };
    (metrics.bridged_calls)
        .get_or_create(&PluginName {
            plugin: name.to_owned(),
        })
        .observe(took.as_secs_f64());
}

/// Counts a request refused for its credentials, for `reason`.
pub(crate) fn auth_failure(reason: &'static str) {
    if let Some(metrics) = get() {
        metrics
            .auth_failures
            .get_or_create(&Reason { reason })
            .inc();
    }
}

/// Counts a call the policy refused, for `reason`.
pub(crate) fn policy_denial(reason: &'static str) {
    if let Some(metrics) = get() {
        metrics
            .policy_denials
            .get_or_create(&Reason { reason })
            .inc();
    }
}

/// Sets whether the circuit breaker of `plugin` is open.
pub(crate) fn breaker_state(plugin: &str, open: bool) {
    if let Some(metrics) = get() {
        metrics
            .breakers_open
            .get_or_create(&PluginName {
                plugin: plugin.to_owned(),
            })
            .set(i64::from(open));
    }
}

/// Counts a generation made.
pub(crate) fn generation_made() {
    if let Some(metrics) = get() {
        metrics.generations.inc();
    }
}

/// Counts a scan of the plugin folder that failed.
pub(crate) fn reload_failed() {
    if let Some(metrics) = get() {
        metrics.reload_failures.inc();
    }
}

/// Counts a session opened.
pub(crate) fn session_opened() {
    if let Some(metrics) = get() {
        metrics.sessions_open.inc();
    }
}

/// Counts a session that ended after `lasted`, over `transport`.
pub(crate) fn session_ended(lasted: Duration, transport: &'static str) {
    if let Some(metrics) = get() {
        metrics.sessions_open.dec();
        (metrics.sessions_ended)
            .get_or_create(&Session {
                network_transport: transport,
            })
            .observe(lasted.as_secs_f64());
    }
}

/// Counts a call of `plugin` as running until the guard goes.
pub(crate) fn call_in_flight(plugin: &str) -> Option<InFlight> {
    let metrics = get()?;
    let gauge = metrics
        .calls_in_flight
        .get_or_create(&PluginName {
            plugin: plugin.to_owned(),
        })
        .clone();
    gauge.inc();
    Some(InFlight(gauge))
}

/// A call counted as running ([`call_in_flight`]).
#[derive(Debug)]
pub(crate) struct InFlight(Gauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_are_rendered_with_the_conventions_names_and_buckets() {
        let metrics = Metrics::new();
        let call = Operation {
            mcp_method_name: "tools/call",
            gen_ai_tool_name: Some("echo".into()),
            gen_ai_prompt_name: None,
            error_type: None,
            mcp_protocol_version: Some("2025-11-25"),
            network_transport: "tcp",
        };
        metrics.operation(&call, Duration::from_millis(3));
        metrics.operation(&call, Duration::from_millis(30));
        let text = metrics.render();
        assert!(
            text.contains("# TYPE mcp_server_operation_duration_seconds histogram"),
            "{text}"
        );
        assert!(text.contains(r#"mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",gen_ai_tool_name="echo",mcp_protocol_version="2025-11-25",network_transport="tcp"} 2"#), "{text}");
        let bucket = |le: &str| {
            let line = text
                .lines()
                .find(|l| l.contains(&format!("{{le=\"{le}\",")))
                .unwrap();
            line.rsplit(' ').next().unwrap().to_owned()
        };
        assert_eq!(bucket("0.01"), "1", "{text}");
        assert_eq!(bucket("300.0"), "2", "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[test]
    fn a_call_in_flight_is_counted_until_its_guard_goes() {
        let metrics = install();
        let guard = call_in_flight("echoes").expect("installed");
        let gauge = metrics.calls_in_flight.get_or_create(&PluginName {
            plugin: "echoes".into(),
        });
        assert_eq!(gauge.get(), 1);
        drop(guard);
        assert_eq!(gauge.get(), 0);
    }
}
