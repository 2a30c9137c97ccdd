//! `acp-rust-http-client URL`: one prompt turn by the official ACP Rust SDK's client side over
//! `agent_client_protocol_http::HttpClient` (HTTP/SSE for `http://`, WebSocket for `ws://`).
//!
//! It sends `initialize`, `session/new` and `session/prompt` (text `go`), answers each
//! `session/request_permission` with the first option whose kind is `allow_once` or
//! `allow_always` (else cancelled), and exits 0 once the prompt is answered. Every frame the
//! transport delivered to the client is printed on stdout as one JSON line, in order; what the
//! client sent goes to stderr, one line each prefixed `sent `.

use std::io::Write;
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, InitializeRequest, NewSessionRequest, PermissionOptionKind, PromptRequest, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, SelectedPermissionOutcome, SessionNotification, TextContent,
};
use agent_client_protocol::{Agent, Channel, Client, ConnectTo, TransportFrame};
use agent_client_protocol_http::HttpClient;
use futures::StreamExt;

fn wire(frame: &TransportFrame) -> String {
    match frame {
        TransportFrame::Single(message) => serde_json::to_string(message).expect("a JSON-RPC message serializes"),
        TransportFrame::Malformed { raw, .. } => raw.clone(),
        other => format!("{other:?}"),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args().nth(1).ok_or("usage: acp-rust-http-client URL")?;
    let transport = HttpClient::builder(&url)
        .configure_http(|http| http.no_proxy())
        .build()?;

    // A tap between the SDK's client and the transport: it prints each frame the transport
    // delivers before handing it on.
    let (remote, driver) = ConnectTo::<Client>::into_channel_and_future(transport);
    let (remote_rx, remote_tx) = remote.into_parts();
    let (local, tap) = Channel::duplex();
    let (mut tap_rx, tap_tx) = tap.into_parts();
    let driver = tokio::spawn(async move {
        match driver {
            Some(driver) => driver.await,
            None => Ok(()),
        }
    });
    let up = tokio::spawn(async move {
        while let Some(frame) = tap_rx.next().await {
            eprintln!("sent {}", wire(&frame));
            if remote_tx.unbounded_send(frame).is_err() {
                break;
            }
        }
    });
    let down = tokio::spawn(async move {
        let mut remote_rx = remote_rx;
        while let Some(frame) = remote_rx.next().await {
            {
                let mut out = std::io::stdout().lock();
                writeln!(out, "{}", wire(&frame)).expect("stdout");
                out.flush().expect("stdout");
            }
            if tap_tx.unbounded_send(frame).is_err() {
                break;
            }
        }
    });

    Client
        .v1()
        .name("acp-rust-http-client")
        .on_receive_notification(
            async |_update: SessionNotification, _cx| Ok(()),
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async |request: RequestPermissionRequest, responder, _cx| {
                let allow = request.options.iter().find(|option| {
                    matches!(
                        option.kind,
                        PermissionOptionKind::AllowOnce | PermissionOptionKind::AllowAlways
                    )
                });
                let outcome = match allow {
                    Some(option) => {
                        RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(option.option_id.clone()))
                    }
                    None => RequestPermissionOutcome::Cancelled,
                };
                responder.respond(RequestPermissionResponse::new(outcome))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(local, async |cx: ConnectionTo<Agent>| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let session = cx.send_request(NewSessionRequest::new("/tmp")).block_task().await?;
            let answer = cx
                .send_request(PromptRequest::new(
                    session.session_id,
                    vec![ContentBlock::Text(TextContent::new("go"))],
                ))
                .block_task()
                .await?;
            eprintln!("stop reason: {:?}", answer.stop_reason);
            Ok(())
        })
        .await?;

    // The client is done: its side of the tap closes, the transport closes the connection.
    up.await?;
    let _ = tokio::time::timeout(Duration::from_secs(10), driver).await;
    down.abort();
    Ok(())
}
