"""The Rust crate is ready to publish: `cargo package -p cogworker` packs
it, and a crate outside the workspace that depends on the unpacked package
and runs a job with it checks (`cargo check`) against its packaged sources
alone: everything the core's build reads (the Lua scripts and dashboard
assets it includes) is inside. Checked, not compiled: compiling would be
the core's codegen again from the same sources the Rust suite compiled and
ran."""

from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRATCH_MAIN = """
use cogworker::redis_server::RedisServer;
use cogworker::{Client, Config, Job, Worker};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[tokio::main]
async fn main() -> Result<(), cogworker::Error> {
    let redis = RedisServer::start(&[])?;
    let mut config = Config::default();
    config.set_redis_url(&redis.url())?;
    Client::new(&config)?.push(Job::new("Scratch").args([serde_json::json!(42)])).await?;
    let ran = Arc::new(AtomicBool::new(false));
    let seen = ran.clone();
    let worker = Worker::builder(config)
        .register("Scratch", move |job| {
            let seen = seen.clone();
            async move {
                seen.store(job.args_slice() == [serde_json::json!(42)], Ordering::SeqCst);
                Ok(())
            }
        })
        .build()?;
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !ran.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    handle.stop();
    running.await.expect("the worker task")?;
    println!("ran: {}", ran.load(Ordering::SeqCst));
    Ok(())
}
"""


def test_the_packaged_crate_checks_outside_the_workspace(tmp_path: Path) -> None:
    env = {**os.environ, "CARGO_BUILD_JOBS": os.environ.get("CARGO_BUILD_JOBS", "2")}
    packaged = subprocess.run(
        # No verify build: the scratch crate below builds the packaged
        # sources (one compile of the core, not two).
        ["cargo", "package", "-p", "cogworker", "--allow-dirty", "--locked", "--no-verify"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert packaged.returncode == 0, packaged.stderr
    # What crates.io would be sent, checked as `cargo publish` checks it
    # (metadata, sources, dependencies from the registry), without the
    # upload and without a second build.
    published = subprocess.run(
        ["cargo", "publish", "--dry-run", "-p", "cogworker", "--allow-dirty", "--locked", "--no-verify"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert published.returncode == 0, published.stderr
    assert "aborting upload due to dry run" in published.stderr
    crate = ROOT / "target" / "package" / "cogworker-0.1.0.crate"
    with tarfile.open(crate) as archive:
        names = archive.getnames()
        archive.extractall(tmp_path, filter="data")
    for inside in ("src/scripts/fail.lua", "src/web/assets/app.js", "README.md"):
        assert f"cogworker-0.1.0/{inside}" in names

    scratch = tmp_path / "scratch"
    (scratch / "src").mkdir(parents=True)
    (scratch / "Cargo.toml").write_text(
        f"""[package]
name = "scratch"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
cogworker = {{ path = "{tmp_path / "cogworker-0.1.0"}" }}
serde_json = "1"
tokio = {{ version = "1", features = ["macros", "rt-multi-thread", "time"] }}
"""
    )
    (scratch / "src" / "main.rs").write_text(SCRATCH_MAIN)
    # The workspace's lock pins the same versions, so the shared target
    # directory's checks (clippy's, in the lint stage) are reused.
    (scratch / "Cargo.lock").write_bytes((ROOT / "Cargo.lock").read_bytes())
    checked = subprocess.run(
        ["cargo", "check", "--quiet", "--offline"],
        cwd=scratch,
        env={**env, "CARGO_TARGET_DIR": str(ROOT / "target")},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert checked.returncode == 0, checked.stderr
