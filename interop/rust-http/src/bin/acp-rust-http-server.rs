//! `acp-rust-http-server ADDR`: a small agent written with the official ACP Rust SDK, served over
//! HTTP/SSE and WebSocket by `agent_client_protocol_http::AcpHttpServer` at `http://ADDR/acp`.
//!
//! For each prompt it sends three `agent_message_chunk` updates, one `tool_call` and its
//! completing `tool_call_update`, asks one `session/request_permission` (options `allow` and
//! `reject`), says which option was chosen, and answers `end_turn`. The first line on stdout is
//! `listening on http://HOST:PORT/acp` (ADDR may use port 0). With a second argument FRAMES,
//! every frame the agent hands to the transport is appended to that file as one JSON line.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, ContentBlock, ContentChunk, InitializeRequest, InitializeResponse, NewSessionRequest,
    NewSessionResponse, PermissionOption, PermissionOptionKind, PromptRequest, PromptResponse,
    RequestPermissionOutcome, RequestPermissionRequest, SessionId, SessionNotification, SessionUpdate, StopReason,
    TextContent, ToolCall, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use agent_client_protocol::{Agent, Channel, Client, ConnectTo, TransportFrame};
use agent_client_protocol_http::AcpHttpServer;
use futures::StreamExt;

static SESSIONS: AtomicU64 = AtomicU64::new(0);

fn text(session: &SessionId, words: &str) -> SessionNotification {
    SessionNotification::new(
        session.clone(),
        SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::Text(TextContent::new(words)))),
    )
}

fn agent() -> impl ConnectTo<Client> {
    Agent
        .v1()
        .name("acp-rust-http-server")
        .on_receive_request(
            async |init: InitializeRequest, responder, _cx| {
                let version = if init.protocol_version > ProtocolVersion::V1 {
                    ProtocolVersion::V1
                } else {
                    init.protocol_version
                };
                responder.respond(InitializeResponse::new(version).agent_capabilities(AgentCapabilities::new()))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async |_new: NewSessionRequest, responder, _cx| {
                let n = SESSIONS.fetch_add(1, Ordering::Relaxed) + 1;
                responder.respond(NewSessionResponse::new(format!("rust_sess_{n}")))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async |prompt: PromptRequest, responder, cx| {
                // The turn asks the client something: it runs outside the dispatch loop, or the
                // permission's answer could never be read.
                let session = prompt.session_id.clone();
                let turn = cx.clone();
                cx.spawn(async move {
                    turn.send_notification(text(&session, "Looking "))?;
                    turn.send_notification(text(&session, "at the "))?;
                    turn.send_notification(text(&session, "code."))?;
                    turn.send_notification(SessionNotification::new(
                        session.clone(),
                        SessionUpdate::ToolCall(
                            ToolCall::new("call_1", "Run the tests")
                                .kind(ToolKind::Execute)
                                .status(ToolCallStatus::InProgress),
                        ),
                    ))?;
                    turn.send_notification(SessionNotification::new(
                        session.clone(),
                        SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                            "call_1",
                            ToolCallUpdateFields::new().status(ToolCallStatus::Completed),
                        )),
                    ))?;
                    let answer = turn
                        .send_request(RequestPermissionRequest::new(
                            session.clone(),
                            ToolCallUpdate::new(
                                "call_2",
                                ToolCallUpdateFields::new()
                                    .title("Write the fix".to_string())
                                    .kind(ToolKind::Edit),
                            ),
                            vec![
                                PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
                                PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
                            ],
                        ))
                        .block_task()
                        .await?;
                    let chosen = match answer.outcome {
                        RequestPermissionOutcome::Selected(selected) => {
                            format!("Chose {}.", selected.option_id)
                        }
                        _ => "Cancelled.".to_string(),
                    };
                    turn.send_notification(text(&session, &chosen))?;
                    responder.respond(PromptResponse::new(StopReason::EndTurn))
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
}

fn wire(frame: &TransportFrame) -> String {
    match frame {
        TransportFrame::Single(message) => serde_json::to_string(message).expect("a JSON-RPC message serializes"),
        TransportFrame::Malformed { raw, .. } => raw.clone(),
        other => format!("{other:?}"),
    }
}

/// One connection's agent behind a tap that appends the agent's frames to `frames`.
fn logged(frames: Option<Arc<Mutex<std::fs::File>>>) -> Channel {
    let (transport_end, tap) = Channel::duplex();
    let (agent_end, agent_tap) = Channel::duplex();
    let (mut from_client, to_client) = tap.into_parts();
    let (mut from_agent, to_agent) = agent_tap.into_parts();
    tokio::spawn(async move {
        if let Err(error) = agent().connect_to(agent_end).await {
            eprintln!("acp-rust-http-server: agent ended: {error}");
        }
    });
    tokio::spawn(async move {
        while let Some(frame) = from_client.next().await {
            if to_agent.unbounded_send(frame).is_err() {
                break;
            }
        }
    });
    tokio::spawn(async move {
        while let Some(frame) = from_agent.next().await {
            if let Some(file) = &frames {
                let mut file = file.lock().expect("the frames file");
                writeln!(file, "{}", wire(&frame)).expect("the frames file");
                file.flush().expect("the frames file");
            }
            if to_client.unbounded_send(frame).is_err() {
                break;
            }
        }
    });
    transport_end
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:0".to_string());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on http://{}/acp", listener.local_addr()?);
    let frames = match std::env::args().nth(2) {
        Some(path) => Some(Arc::new(Mutex::new(std::fs::File::create(path)?))),
        None => None,
    };
    let app = AcpHttpServer::new(move || logged(frames.clone())).into_router();
    axum::serve(listener, app).await?;
    Ok(())
}
