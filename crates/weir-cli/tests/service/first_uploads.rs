//! Many clients' first uploads into one folder that does not exist yet, at once, through a
//! real `weir serve`: every `PUT` is stored (`201`), none refused because another commit
//! created the folder at the same moment (issue 37: a `409 Path conflict` "not a directory"
//! once in `weir-bench services`; the moment itself is made to happen in weir-store's
//! `upload/new_dirs_tests.rs`). Then the files come back, each with its own bytes.

use crate::support::*;

#[test]
fn concurrent_first_uploads_into_one_new_nested_folder_are_all_stored() {
    const CLIENTS: usize = 64;
    const ROUNDS: usize = 8;
    let s = Server::start(&[]);
    for round in 0..ROUNDS {
        let start = std::sync::Barrier::new(CLIENTS);
        let statuses: Vec<(usize, u16, String)> = std::thread::scope(|scope| {
            let puts: Vec<_> = (0..CLIENTS)
                .map(|i| {
                    let (s, start) = (&s, &start);
                    scope.spawn(move || {
                        let head = format!("PUT /files/new-{round}/sub/f-{i} HTTP/1.1");
                        start.wait();
                        let r = s.request(&head, format!("{round}/{i}").as_bytes());
                        (i, r.status, String::from_utf8_lossy(&r.body).into_owned())
                    })
                })
                .collect();
            puts.into_iter().map(|p| p.join().unwrap()).collect()
        });
        for (i, status, body) in &statuses {
            assert_eq!(*status, 201, "round {round}, f-{i}: {body}");
        }
        for i in 0..CLIENTS {
            let r = s.request(&format!("GET /files/new-{round}/sub/f-{i} HTTP/1.1"), b"");
            assert_eq!(
                (r.status, r.body),
                (200, format!("{round}/{i}").into_bytes())
            );
        }
    }
}
