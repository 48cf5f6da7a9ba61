//! Locked guest images against a mirror that misbehaves as real ones do:
//! a local HTTP server stands in for Debian's archive, serving the pool
//! files the committed lock pins but release indexes that are stale or do
//! not match their signed `InRelease` (signed here by a test key that the
//! build is pointed at with `HARTSCOPE_DEBIAN_KEYRING`).
//!
//! * `guest lock --update` refuses a mismatched index in one sentence and
//!   leaves the lock alone; with a consistent index it pins the same files.
//! * `guest build` needs no index: from an empty cache it builds the
//!   `debian` image byte-for-byte like the one already in the cache, asks
//!   the server for nothing under `dists/`, and a second call asks for nothing.
//! * A locked file gone from the mirror is one sentence naming it and the
//!   command that re-locks, with nothing left under the image's name.

use crate::support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use support::*;

/// A static file server on loopback: GET of files under `root`, 404 for
/// anything else; every request path is logged.
struct Mirror {
    url: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl Mirror {
    fn serve(root: PathBuf) -> Mirror {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let url = format!("http://{}", listener.local_addr().unwrap());
        let log = Arc::new(Mutex::new(Vec::new()));
        let seen = log.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut request = String::new();
                if reader.read_line(&mut request).is_err() {
                    continue;
                }
                loop {
                    let mut header = String::new();
                    if reader
                        .read_line(&mut header)
                        .map(|n| n == 0)
                        .unwrap_or(true)
                        || header == "\r\n"
                    {
                        break;
                    }
                }
                let path = request.split_whitespace().nth(1).unwrap_or("/").to_string();
                seen.lock().unwrap().push(path.clone());
                let file = root.join(path.trim_start_matches('/'));
                let ok = !path.contains("..") && file.is_file();
                let body = if ok {
                    std::fs::read(&file).unwrap_or_default()
                } else {
                    b"not found".to_vec()
                };
                let status = if ok { "200 OK" } else { "404 Not Found" };
                let head = format!(
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = conn
                    .write_all(head.as_bytes())
                    .and_then(|_| conn.write_all(&body));
            }
        });
        Mirror { url, log }
    }

    fn take_log(&self) -> Vec<String> {
        std::mem::take(&mut *self.log.lock().unwrap())
    }
}

fn sha256(data: &[u8]) -> String {
    let out = Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(data)?;
            c.wait_with_output()
        });
    String::from_utf8_lossy(&out.expect("sha256sum").stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

fn run(cmd: &mut Command) -> std::process::Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A throw-away OpenPGP key that signs the fake release files.
struct Signer {
    home: PathBuf,
    keyring: PathBuf,
}

impl Signer {
    fn new(dir: &Path) -> Signer {
        let home = dir.join("gnupg");
        std::fs::create_dir_all(&home).unwrap();
        let gpg = |args: &[&str]| {
            let mut c = Command::new("gpg");
            c.env("GNUPGHOME", &home)
                .args(["--batch", "--pinentry-mode", "loopback", "--passphrase", ""])
                .args(args);
            run(&mut c)
        };
        gpg(&[
            "--quick-gen-key",
            "hartscope test mirror <test@invalid>",
            "ed25519",
            "sign",
            "never",
        ]);
        let keyring = dir.join("keyring.gpg");
        std::fs::write(&keyring, gpg(&["--export"]).stdout).unwrap();
        Signer { home, keyring }
    }

    fn clearsign(&self, text: &str, dest: &Path) {
        let plain = dest.with_extension("plain");
        std::fs::write(&plain, text).unwrap();
        let mut c = Command::new("gpg");
        c.env("GNUPGHOME", &self.home)
            .args([
                "--batch",
                "--yes",
                "--pinentry-mode",
                "loopback",
                "--passphrase",
                "",
                "--clearsign",
                "-o",
            ])
            .arg(dest)
            .arg(&plain);
        run(&mut c);
        std::fs::remove_file(plain).unwrap();
    }
}

impl Drop for Signer {
    fn drop(&mut self) {
        let _ = Command::new("gpgconf")
            .env("GNUPGHOME", &self.home)
            .args(["--kill", "gpg-agent"])
            .status();
    }
}

fn xz(text: &str) -> Vec<u8> {
    let mut c = Command::new("xz")
        .args(["-c"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    c.wait_with_output().unwrap().stdout
}

/// The committed lock of `image`, parsed.
fn committed_lock(image: &str) -> hs_guest::Lock {
    let text = std::fs::read_to_string(root().join(format!("guest/images/{image}.lock"))).unwrap();
    toml::from_str(&text).unwrap()
}

/// Writes `dists/SUITE/{InRelease, indexes}` under `archive`: the release
/// lists each index's true hash unless the index is in `stale`, when the
/// served index differs from what the signed release lists.
fn publish(
    signer: &Signer,
    archive: &Path,
    suite: &str,
    indexes: &BTreeMap<&str, String>,
    stale: bool,
) {
    let dists = archive.join("dists").join(suite);
    let mut release = format!("Origin: Test\nSuite: {suite}\nDate: Mon, 23 Nov 2026 00:00:00 UTC\nAcquire-By-Hash: yes\nSHA256:\n");
    for (path, text) in indexes {
        let data = xz(text);
        release.push_str(&format!(" {} {} {path}\n", sha256(&data), data.len()));
        let served = if stale {
            xz(&format!(
                "{text}\nPackage: added-after-signing\nVersion: 1\n"
            ))
        } else {
            data
        };
        let file = dists.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, served).unwrap();
    }
    signer.clearsign(&release, &dists.join("InRelease"));
}

/// Package and Sources stanzas that resolve to exactly the files of `lock`.
fn indexes_for(lock: &hs_guest::Lock) -> BTreeMap<(String, String), String> {
    let mut out: BTreeMap<(String, String), String> = BTreeMap::new();
    let mut sources: BTreeMap<(String, String), Vec<&hs_guest::LockedFile>> = BTreeMap::new();
    for f in &lock.files {
        if f.path.ends_with(".deb") {
            // The kernel and the extras (trixie riscv64 binaries) come
            // from the riscv64 index; the rest are arch-all or host tools.
            let index = if f.role == "kernel" || f.role == "extra" {
                "main/binary-riscv64/Packages.xz"
            } else {
                "main/binary-amd64/Packages.xz"
            };
            let text = out.entry((f.suite.clone(), index.into())).or_default();
            if f.role == "kernel" {
                text.push_str(&format!(
                    "Package: linux-image-riscv64\nVersion: 6.12.107-1\nDepends: {}\n\n",
                    f.package
                ));
            }
            text.push_str(&format!(
                "Package: {}\nVersion: {}\nFilename: {}\nSize: {}\nSHA256: {}\n\n",
                f.package, f.version, f.path, f.size, f.sha256
            ));
        } else {
            sources
                .entry((f.suite.clone(), f.package.clone()))
                .or_default()
                .push(f);
        }
    }
    for ((suite, package), files) in sources {
        let dir = files[0].path.rsplit_once('/').unwrap().0;
        let mut s = format!(
            "Package: {package}\nVersion: {}\nDirectory: {dir}\nChecksums-Sha256:\n",
            files[0].version
        );
        for f in files {
            s.push_str(&format!(" {} {} {}\n", f.sha256, f.size, f.file_name()));
        }
        out.entry((suite, "main/source/Sources.xz".into()))
            .or_default()
            .push_str(&format!("{s}\n"));
    }
    out
}

fn archive_of(root: &Path, suite: &str) -> PathBuf {
    root.join(if suite.ends_with("-security") {
        "debian-security"
    } else {
        "debian"
    })
}

fn publish_all(signer: &Signer, root: &Path, lock: &hs_guest::Lock, stale: bool) {
    let mut by_suite: BTreeMap<String, BTreeMap<&str, String>> = BTreeMap::new();
    let all = indexes_for(lock);
    for ((suite, index), text) in &all {
        by_suite
            .entry(suite.clone())
            .or_default()
            .insert(index.as_str(), text.clone());
    }
    for (suite, indexes) in &by_suite {
        publish(signer, &archive_of(root, suite), suite, indexes, stale);
    }
}

fn hartscope(
    mirror: &Mirror,
    cache: &Path,
    guest_dir: &Path,
    keyring: &Path,
    args: &[&str],
) -> std::process::Output {
    Command::new(HARTSCOPE)
        .args(args)
        .env("HARTSCOPE_CACHE", cache)
        .env("HARTSCOPE_GUEST_DIR", guest_dir)
        .env("HARTSCOPE_DEBIAN_MIRROR", format!("{}/debian", mirror.url))
        .env(
            "HARTSCOPE_DEBIAN_SECURITY_MIRROR",
            format!("{}/debian-security", mirror.url),
        )
        .env("HARTSCOPE_DEBIAN_KEYRING", keyring)
        .output()
        .expect("run hartscope")
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_tree(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn lock_update_refuses_an_index_that_does_not_match_its_signed_release() {
    let scratch = Scratch::new("guest-lock-update");
    let signer = Signer::new(&scratch.0);
    let mirror_root = scratch.path("mirror");
    let mirror = Mirror::serve(mirror_root.clone());
    let guest = scratch.path("guest");
    copy_tree(&root().join("guest"), &guest);
    let lock_path = guest.join("images/debian.lock");
    let before = std::fs::read(&lock_path).unwrap();
    let committed = committed_lock("debian");
    let cache = scratch.path("cache");

    // A served index that is not the one the release signs: refused, lock untouched.
    publish_all(&signer, &mirror_root, &committed, true);
    let out = hartscope(
        &mirror,
        &cache,
        &guest,
        &signer.keyring,
        &["guest", "lock", "--image", "debian", "--update"],
    );
    let err = stderr(&out);
    assert!(
        !out.status.success(),
        "a mismatched index was accepted: {err}"
    );
    let last = err.lines().last().unwrap_or("");
    assert!(
        last.starts_with("hartscope: ") && last.contains("does not match its signed InRelease"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&lock_path).unwrap(),
        before,
        "the lock changed"
    );

    // A release file altered after signing: gpgv refuses it.
    publish_all(&signer, &mirror_root, &committed, false);
    let inrelease = archive_of(&mirror_root, "trixie").join("dists/trixie/InRelease");
    let signed = std::fs::read_to_string(&inrelease).unwrap();
    std::fs::write(
        &inrelease,
        signed.replace("Suite: trixie", "Suite: trixie-tampered"),
    )
    .unwrap();
    let out = hartscope(
        &mirror,
        &cache,
        &guest,
        &signer.keyring,
        &["guest", "lock", "--image", "debian", "--update"],
    );
    assert!(
        !out.status.success() && stderr(&out).contains("checking the signature"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read(&lock_path).unwrap(),
        before,
        "the lock changed"
    );

    // A consistent mirror: the same files are pinned, now every one signed.
    publish_all(&signer, &mirror_root, &committed, false);
    let out = hartscope(
        &mirror,
        &cache,
        &guest,
        &signer.keyring,
        &["guest", "lock", "--image", "debian", "--update"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let relocked: hs_guest::Lock =
        toml::from_str(&std::fs::read_to_string(&lock_path).unwrap()).unwrap();
    let pins = |l: &hs_guest::Lock| {
        l.files
            .iter()
            .map(|f| (f.path.clone(), f.size, f.sha256.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(pins(&relocked), pins(&committed));
    assert!(relocked.files.iter().all(|f| f.signed), "{relocked:?}");
    assert!(
        !mirror.take_log().iter().any(|p| p.contains("/pool/")),
        "locking fetched pool files"
    );
}

#[test]
fn build_from_the_lock_needs_no_index_and_is_byte_identical() {
    let reference = image("debian");
    let real_cache = hs_guest::Builder::from_env().cache;
    let scratch = Scratch::new("guest-lock-build");
    let signer = Signer::new(&scratch.0);
    let mirror_root = scratch.path("mirror");
    let committed = committed_lock("debian");
    // The pool files the lock pins, from the cache that built `reference`;
    // stale indexes beside them.
    for f in &committed.files {
        let have = real_cache
            .join("downloads")
            .join(&f.sha256)
            .join(f.file_name());
        assert!(
            have.is_file(),
            "{} is not in the cache; run `hartscope guest build --image debian` first",
            have.display()
        );
        let dest = archive_of(&mirror_root, &f.suite).join(&f.path);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::hard_link(&have, &dest)
            .or_else(|_| std::fs::copy(&have, &dest).map(|_| ()))
            .unwrap();
    }
    publish_all(&signer, &mirror_root, &committed, true);
    let mirror = Mirror::serve(mirror_root.clone());
    let guest = root().join("guest");

    // A locked file gone from the mirror: one sentence, nothing left behind.
    let gone = &committed
        .files
        .iter()
        .find(|f| f.role == "firmware-source")
        .unwrap()
        .path;
    let gone_path = archive_of(&mirror_root, "trixie").join(gone);
    let kept = scratch.path("kept");
    std::fs::rename(&gone_path, &kept).unwrap();
    let cache0 = scratch.path("cache0");
    let out = hartscope(
        &mirror,
        &cache0,
        &guest,
        &signer.keyring,
        &["guest", "build", "--image", "debian"],
    );
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    let last = err.lines().last().unwrap_or("");
    assert!(
        last.contains(gone.as_str())
            && last.contains("hartscope guest lock --image debian --update"),
        "{err}"
    );
    let images = cache0.join("images");
    assert!(
        !images.exists() || std::fs::read_dir(&images).unwrap().next().is_none(),
        "left under images/"
    );
    std::fs::rename(&kept, &gone_path).unwrap();
    mirror.take_log();

    // From an empty cache: built from the pool alone, identical to the reference.
    let cache = scratch.path("cache");
    let out = hartscope(
        &mirror,
        &cache,
        &guest,
        &signer.keyring,
        &["guest", "build", "--image", "debian"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    assert_eq!(
        dir.file_name(),
        reference.dir.file_name(),
        "same recipe hash"
    );
    let requests = mirror.take_log();
    assert!(
        requests.iter().all(|p| p.contains("/pool/")),
        "read more than the pool: {requests:?}"
    );
    assert_eq!(requests.len(), committed.files.len(), "{requests:?}");
    let manifest = reference.read_manifest().unwrap();
    assert!(manifest.files.len() >= 10, "{:?}", manifest.files.keys());
    let differ: Vec<&String> = manifest
        .files
        .iter()
        .filter(|(file, sum)| sha256(&std::fs::read(dir.join(file)).unwrap()) != **sum)
        .map(|(f, _)| f)
        .collect();
    assert!(
        differ.is_empty(),
        "these files differ between the two caches: {differ:?}"
    );
    let ours = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    let theirs = std::fs::read_to_string(reference.dir.join("manifest.json")).unwrap();
    let lines: Vec<(&str, &str)> = ours
        .lines()
        .zip(theirs.lines())
        .filter(|(a, b)| a != b)
        .collect();
    assert!(
        ours == theirs,
        "manifest.json differs from {}: {lines:?}",
        reference.dir.display()
    );

    // An unchanged lock: the second call builds and fetches nothing.
    let out = hartscope(
        &mirror,
        &cache,
        &guest,
        &signer.keyring,
        &["guest", "build", "--image", "debian"],
    );
    assert!(
        out.status.success() && stderr(&out).contains("up to date"),
        "{}",
        stderr(&out)
    );
    assert_eq!(mirror.take_log(), Vec::<String>::new());
}
