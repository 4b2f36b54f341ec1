//! The wrk cross-check: each server measured once with this crate's client and once with wrk,
//! back to back, to show the load generator is not what limits the figures.

use super::{PlaintextArgs, REQUEST};
use crate::client::load::{LoadSpec, run_for};
use crate::client::wrk;
use crate::report::table::Table;
use crate::scenario::{Peer, Settings};
use std::io;
use std::time::Duration;

/// Runs the cross-check over `peers`; returns its Markdown.
pub fn run(
    s: &Settings,
    a: &PlaintextArgs,
    peers: &mut [Peer],
    window: Duration,
) -> io::Result<String> {
    let mut t = Table::new(&[
        "System",
        "Depth",
        "weir-bench client (req/s)",
        "wrk (req/s)",
        "wrk / ours",
    ]);
    let mut commands = Vec::new();
    for &depth in &a.depths {
        for peer in peers.iter_mut() {
            let Ok(server) = &mut peer.server else {
                continue;
            };
            let spec = LoadSpec {
                endpoint: server.endpoint().clone(),
                connections: a.connections,
                threads: s.client_threads,
                depth,
                request: REQUEST.to_vec(),
                rate: None,
                expect: None,
            };
            let (_, ours) = run_for(&spec, Duration::from_millis(300), window)?;
            let run = wrk::run(
                server.endpoint(),
                a.connections,
                s.client_threads,
                depth,
                window,
            )?;
            if !commands.contains(&run.command) {
                commands.push(run.command.clone());
            }
            t.row(vec![
                peer.label.clone(),
                depth.to_string(),
                format!("{ours:.0}"),
                format!("{:.0}", run.requests_per_sec),
                format!("{:.2}", run.requests_per_sec / ours),
            ]);
        }
    }
    Ok(format!(
        "\nwrk cross-check: one run each, back to back with one run of this crate's client, \
         same servers, same connections and threads. Command: {}, with `pipeline.lua` \
         (`DEPTH` = the depth):\n\n```lua\n{}```\n\n{}",
        commands
            .iter()
            .map(|c| format!("`{c}`"))
            .collect::<Vec<_>>()
            .join(", "),
        wrk::SCRIPT,
        t.markdown()
    ))
}
