//! A local process that can write inside the root swaps a directory for a symlink out of the
//! root, back and forth, while requests go through it: nothing outside the root is ever read or
//! written (issue 19, point 8).

use crate::support::*;
use std::sync::atomic::{AtomicBool, Ordering};

#[cfg(target_os = "linux")]
#[test]
fn a_directory_swapped_for_a_symlink_under_load_never_leads_out_of_the_root() {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    const GETS: usize = 400;
    const PUTS: usize = 100;
    let s = Server::start(&[]);
    assert_eq!(s.request("PUT /files/d/f HTTP/1.1", b"inside").status, 201);
    let outside = s.dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("f"), b"OUTSIDE").unwrap();
    // `d` and `link` trade places atomically (`RENAME_EXCHANGE`), as fast as they can.
    std::os::unix::fs::symlink(&outside, s.root.join("link")).unwrap();
    let (d, link) = (s.root.join("d"), s.root.join("link"));
    let stop = AtomicBool::new(false);
    let mut swaps = 0u64;
    // Each request's status and whether it read the outside file; the swapper stops before
    // anything is checked, so that a failure fails rather than hangs.
    let outcomes = std::thread::scope(|scope| {
        let swapper = scope.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                renameat_with(CWD, &d, CWD, &link, RenameFlags::EXCHANGE).unwrap();
                swaps += 1;
            }
        });
        let getters: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    (0..GETS / 2)
                        .map(|_| {
                            let r = s.request("GET /files/d/f HTTP/1.1", b"");
                            (r.status, r.body == b"OUTSIDE")
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let putter = scope.spawn(|| {
            (0..PUTS)
                .map(|i| {
                    let path = format!("PUT /files/d/new{i} HTTP/1.1");
                    (s.request(&path, b"written").status, false)
                })
                .collect::<Vec<_>>()
        });
        let mut outcomes: Vec<_> = getters.into_iter().map(|g| g.join()).collect();
        outcomes.push(putter.join());
        stop.store(true, Ordering::Relaxed);
        swapper.join().unwrap();
        outcomes
    });
    let outcomes: Vec<(u16, bool)> = outcomes.into_iter().flat_map(Result::unwrap).collect();
    let read_outside = outcomes.iter().filter(|(_, outside)| *outside).count();
    assert_eq!(read_outside, 0, "requests that read outside the root");
    let statuses: Vec<u16> = outcomes.iter().map(|(status, _)| *status).collect();
    // Refused (403: a link met; 404/409: a moment with no directory there) or done inside.
    for status in &statuses {
        assert!(
            matches!(status, 200 | 201 | 403 | 404 | 409),
            "unexpected status {status}"
        );
    }
    assert!(swaps > 0);
    let mut names: Vec<_> = std::fs::read_dir(&outside)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["f"], "written outside the root");
    assert_eq!(std::fs::read(outside.join("f")).unwrap(), b"OUTSIDE");
    assert!(temps(&outside).is_empty());
}
