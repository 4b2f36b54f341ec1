//! A 64 MiB signed chunk passes through the decoder with its fixed framing buffer only: no heap
//! allocation at all while decoding (counted by a counting allocator on this test's thread), and
//! the decoder's buffer is [`MAX_LINE`] bytes whatever the chunk size. The input comes in 64 KiB
//! reads, as from a socket, and the data is handed out as ranges of those reads.

use weir_s3api::checksum::{Checksum, ChecksumAlgorithm};
use weir_s3api::chunked::{ChunkChain, ChunkedDecoder, Event, MAX_LINE};
use weir_s3api::sigv4::SigningKey;
use weir_testkit::alloc;

#[global_allocator]
static ALLOC: alloc::CountingMarked = alloc::CountingMarked;

const SEED: &str = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";
const CHUNK: usize = 64 << 20;
const READ: usize = 64 << 10;

#[test]
fn a_64_mib_chunk_is_decoded_without_allocating() {
    let chain = || {
        let key = SigningKey::derive("secret", "20261130", "us-east-1", "s3");
        ChunkChain::from_parts(
            key,
            "20261130T120000Z",
            "20261130/us-east-1/s3/aws4_request",
            SEED,
        )
        .unwrap()
    };
    let data: Vec<u8> = (0..CHUNK).map(|i| (i % 251) as u8).collect();
    let mut signer = chain();
    let head = format!("{CHUNK:x};chunk-signature={}\r\n", signer.sign_chunk(&data));
    let alg = ChecksumAlgorithm::Crc64Nvme;
    let value = Checksum::of(alg, &data).to_base64();
    let tail = format!(
        "\r\n0;chunk-signature={}\r\n{}:{value}\r\nx-amz-trailer-signature:{}\r\n\r\n",
        signer.sign_chunk(b""),
        alg.header_name(),
        signer.sign_trailers(&[(alg.header_name(), &value)]),
    );
    // The wire, read by read: the framing and the data, never the whole body in one buffer.
    let mut reads: Vec<Vec<u8>> = vec![head.into_bytes()];
    reads.extend(data.chunks(READ).map(<[u8]>::to_vec));
    reads.push(tail.into_bytes());

    let mut decoder = ChunkedDecoder::signed(chain(), Some(alg), Some(CHUNK as u64));
    assert_eq!(decoder.buffer_capacity(), MAX_LINE);
    let mut check = Checksum::new(alg);
    let mut decoded = 0usize;
    let mut trailer = None;

    alloc::count_this_thread(true);
    let probe = alloc::allocations();
    drop(std::hint::black_box(Vec::<u8>::with_capacity(16)));
    assert!(
        alloc::allocations() > probe,
        "the counter counts this thread"
    );
    let before = alloc::allocations();
    for read in &reads {
        let mut pos = 0;
        while pos < read.len() {
            let (used, event) = decoder.decode(&read[pos..]).expect("a valid body");
            match event {
                Event::Data(range) => {
                    // Zero-copy: the range is of the read itself.
                    let piece = &read[pos..][range];
                    check.update(piece);
                    decoded += piece.len();
                }
                Event::NeedMore => {}
                Event::End(trailers) => trailer = Some(trailers.checksum),
            }
            pos += used;
        }
    }
    let allocated = alloc::allocations() - before;
    alloc::count_this_thread(false);

    assert_eq!(allocated, 0, "heap allocations while decoding 64 MiB");
    assert_eq!(decoder.buffer_capacity(), MAX_LINE);
    assert!(decoder.is_done() && decoder.finish().is_ok());
    assert_eq!(decoded, CHUNK);
    let computed = check.finalize();
    assert_eq!(computed, Checksum::of(alg, &data));
    assert_eq!(
        trailer,
        Some(Some(computed)),
        "the body ended with the data's checksum trailer"
    );
}
