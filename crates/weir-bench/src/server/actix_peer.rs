//! The actix-web 4 peer (issue 14): the same routes with the same work as every other system
//! ([`super`]), written as an actix-web user would, served by actix-web's `HttpServer` with
//! `threads` workers (each a single-threaded actix runtime, its own accept queue fed by
//! actix's acceptor thread).
//!
//! - `GET /plaintext`: `Hello, World!`, `Content-Type` and `Server` set by the handler, `Date`
//!   added by actix-web (cached, as hyper and weir do);
//! - `POST /post`: drains the small body from the `Payload` stream, answers like `/plaintext`;
//! - `POST /upload` (and `PUT`): the body streamed from `web::Payload` (actix's chunks, no
//!   size limit: the extractor that buffers is not used), discarded or written with `std::fs`
//!   on the worker's thread as the other systems' file sinks; answered with an
//!   [`UploadTrace`].
//!
//! HTTP/1.1 over TCP only: TLS, h2c and Unix sockets are refused (those rows compare weir and
//! hyper), and so is the splice sink (actix has no such path).

use crate::server::plaintext::{BODY, CONTENT_TYPE, SERVER};
use crate::server::sink::create_upload_file;
use crate::server::trace::UploadTrace;
use crate::server::{Endpoint, ServeArgs, Sink, StartError, listen};
use actix_web::http::header;
use actix_web::{App, HttpResponse, HttpServer, web};
use futures_core::Stream;
use std::future::poll_fn;
use std::io::Write;
use std::path::PathBuf;
use std::pin::Pin;

/// Starts actix-web's server on its own thread; returns once bound.
pub fn start(args: &ServeArgs) -> Result<Endpoint, StartError> {
    if args.tls_cert.is_some() || args.h2c || args.unix.is_some() || args.per_core {
        return Err(StartError::Unavailable(
            "the actix-web peer serves plain HTTP/1.1 over TCP".into(),
        ));
    }
    match args.sink {
        Sink::Discard | Sink::File => {}
        Sink::Splice | Sink::Chunks => {
            return Err(StartError::Unavailable("actix-web has no such sink".into()));
        }
    }
    let (listener, endpoint) = listen::bind(args)?;
    let listener = std::net::TcpListener::from(listener);
    let uploads = web::Data::new(Uploads {
        sink: args.sink,
        dir: args.data_dir.clone(),
    });
    let threads = args.threads.max(1);
    let server = HttpServer::new(move || {
        App::new()
            .app_data(uploads.clone())
            .route("/plaintext", web::get().to(hello))
            .route("/post", web::post().to(post_small))
            .route("/upload", web::post().to(upload))
            .route("/upload", web::put().to(upload))
    })
    .workers(threads)
    // No shutdown wait: the child exits when told to.
    .shutdown_timeout(0)
    .disable_signals()
    .listen(listener)?
    .run();
    std::thread::Builder::new()
        .name("actix-system".into())
        .spawn(move || {
            if let Err(e) = actix_web::rt::System::new().block_on(server) {
                eprintln!("actix peer: {e}");
            }
        })?;
    Ok(endpoint)
}

struct Uploads {
    sink: Sink,
    dir: PathBuf,
}

async fn hello() -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, CONTENT_TYPE))
        .insert_header((header::SERVER, SERVER))
        .body(BODY)
}

async fn post_small(mut body: web::Payload) -> HttpResponse {
    while let Some(Ok(_)) = next(&mut body).await {}
    hello().await
}

async fn upload(uploads: web::Data<Uploads>, mut body: web::Payload) -> HttpResponse {
    let mut trace = UploadTrace::start();
    let mut file = match uploads.sink {
        Sink::File => match create_upload_file(&uploads.dir) {
            Ok(f) => Some(f),
            Err(e) => return HttpResponse::InternalServerError().body(e.to_string()),
        },
        _ => None,
    };
    while let Some(chunk) = next(&mut body).await {
        let chunk = match chunk {
            Ok(chunk) => chunk,
            Err(e) => return HttpResponse::BadRequest().body(e.to_string()),
        };
        trace.received(chunk.len());
        if let Some(f) = file.as_mut() {
            // Blocking write on the worker's thread, on purpose: as the other systems' sinks.
            if let Err(e) = f.write_all(&chunk) {
                return HttpResponse::InternalServerError().body(e.to_string());
            }
        }
    }
    trace.finish();
    HttpResponse::Ok().body(trace.encode())
}

/// The payload's next chunk (`StreamExt::next` without futures-util).
async fn next<S: Stream + Unpin>(stream: &mut S) -> Option<S::Item> {
    poll_fn(|cx| Pin::new(&mut *stream).poll_next(cx)).await
}
