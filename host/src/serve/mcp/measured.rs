//! The handler as rmcp serves it: [`Measured`] times each request into
//! `mcp.server.operation.duration` when metrics are on, and hands everything to [`Handler`].

use std::{borrow::Cow, time::Instant};

use rmcp::{
    ErrorData, RoleServer, Service,
    model::{ClientNotification, ClientRequest, ProtocolVersion, ServerInfo, ServerResult},
    service::{NotificationContext, RequestContext},
};

use crate::observe::metrics::{self, Operation};

use super::Handler;

/// A [`Handler`] whose requests are measured, over `transport` (`tcp` for HTTP, `pipe` for
/// stdio, as `network.transport` names them).
#[derive(Debug, Clone)]
pub(crate) struct Measured {
    handler: Handler,
    transport: &'static str,
}

impl Measured {
    /// `handler`, serving over `transport`.
    pub(crate) fn new(handler: Handler, transport: &'static str) -> Self {
        Self { handler, transport }
    }
}

impl Service<RoleServer> for Measured {
    async fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        let Some(metrics) = metrics::get() else {
            return self.handler.handle_request(request, context).await;
        };
        let started = Instant::now();
        let method = metrics::method_label(request.method());
        let (tool, prompt) = match &request {
            ClientRequest::CallToolRequest(call) => (Some(call.params.name.to_string()), None),
            ClientRequest::GetPromptRequest(get) => (None, Some(get.params.name.clone())),
            _ => (None, None),
        };
        let version = protocol_label(context.protocol_version());
        let answer = self.handler.handle_request(request, context).await;
        let error_type = match &answer {
            Ok(ServerResult::CallToolResult(result)) if result.is_error == Some(true) => {
                Some("tool_error".to_owned())
            }
            Ok(_) => None,
            Err(error) => Some(error.code.0.to_string()),
        };
        // A name the server does not serve is not a label: a client could make up any number.
        let unknown = matches!(&answer, Err(e) if e.code == rmcp::model::ErrorCode::INVALID_PARAMS);
        let operation = Operation {
            mcp_method_name: method,
            gen_ai_tool_name: tool.filter(|_| !unknown),
            gen_ai_prompt_name: prompt.filter(|_| !unknown),
            error_type,
            mcp_protocol_version: version,
            network_transport: self.transport,
        };
        metrics.operation(&operation, started.elapsed());
        answer
    }

    async fn handle_notification(
        &self,
        notification: ClientNotification,
        context: NotificationContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.handler
            .handle_notification(notification, context)
            .await
    }

    fn get_info(&self) -> ServerInfo {
        Service::<RoleServer>::get_info(&self.handler)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Service::<RoleServer>::supported_protocol_versions(&self.handler)
    }
}

/// A protocol version as a label: one of the versions the server speaks, else `None`.
fn protocol_label(version: Option<ProtocolVersion>) -> Option<&'static str> {
    const VERSIONS: [&str; 5] = [
        "2026-07-28",
        "2025-11-25",
        "2025-06-18",
        "2025-03-26",
        "2024-11-05",
    ];
    let version = version?;
    VERSIONS.into_iter().find(|known| *known == version.as_str())
}
