//! Integration tests of `weir serve`, `weir put` and `weir get`: the real binary on 127.0.0.1
//! ports chosen by the OS (or Unix sockets), with curl, raw sockets and the weir client.

mod support;

mod access_log;
mod activation;
mod auth;
mod client;
mod conditional;
mod config;
mod confinement;
mod content_type;
mod cors;
mod crash;
mod cross_site;
mod enospc;
mod folder_download;
mod forms;
mod h2spec;
mod hooks;
mod large;
mod listing;
mod metrics;
mod multipart;
mod operator;
mod page;
mod passed_file;
mod paths;
mod pipeline;
mod pre_upload;
mod preconditions;
mod problems;
mod put_resume;
mod put_trailer;
mod ranges;
mod rebinding;
mod resumable;
mod routes;
mod scopes;
mod slow;
mod space;
mod tls;
mod tls_reload;
mod token_reload;
mod trailers;
mod tus;
mod webhooks;
