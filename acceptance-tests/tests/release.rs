//! `release.sh package` produces what the Terraform and OpenTofu registries require: one zip per platform with the
//! single binary named by their convention (`.exe` on Windows), the protocol-6 manifest, a SHA256SUMS covering
//! both, and — when a key is configured — a binary detached GPG signature of SHA256SUMS that `gpg --verify`
//! accepts. The key is a throwaway RSA key in a private GNUPGHOME. Needs `gpg` and `unzip` (Debian packages
//! `gnupg` and `unzip`), no test ground.
use liqo_acceptance::ground::repository_root;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sha2::{Digest, Sha256};

const NAME: &str = "terraform-provider-liqo";
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A required tool, or a failure that says how to install it (skipping would hide an untested release path).
fn tool(program: &str, debian_package: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).map(|dir| dir.join(program)).find(|p| p.is_file()).unwrap_or_else(|| {
        panic!(
            "`{program}` is not on PATH; this test needs it. Install it with `sudo apt-get install -y {debian_package}` \
             (Debian/Ubuntu) or your system's package manager."
        )
    })
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// A stand-in for the provider binary: packaging only copies it.
fn dummy_binary(dir: &Path) -> PathBuf {
    let path = dir.join(NAME);
    std::fs::write(&path, "#!/bin/sh\necho dummy provider\n").unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path
}

/// `release.sh package` with `env` added and any signing key of the caller's environment removed.
fn package(binary: &Path, out: &Path, os: &str, arch: &str, env: &[(&str, &str)]) -> Output {
    let mut command = Command::new("bash");
    command
        .arg(repository_root().join("release.sh"))
        .args(["package", "--binary"])
        .arg(binary)
        .arg("--out")
        .arg(out)
        .args(["--os", os, "--arch", arch])
        .env_remove("GPG_FINGERPRINT")
        .env_remove("GPG_KEY_ID")
        .env_remove("GPG_PASSPHRASE");
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().expect("running bash release.sh");
    assert!(output.status.success(), "release.sh package --os {os} --arch {arch} failed:\n{}", text(&output));
    output
}

fn zip_members(zip: &Path) -> Vec<String> {
    let output = Command::new(tool("unzip", "unzip")).arg("-Z1").arg(zip).output().unwrap();
    assert!(output.status.success(), "unzip -Z1 {}:\n{}", zip.display(), text(&output));
    String::from_utf8_lossy(&output.stdout).lines().map(str::to_owned).collect()
}

fn file_name(os: &str, arch: &str) -> String {
    format!("{NAME}_{VERSION}_{os}_{arch}.zip")
}

/// Every line of SHA256SUMS is `<hex>  <file>` with the file's real hash, and the lines cover exactly the zips
/// of this version and the manifest in `dir`.
fn check_sha256sums(dir: &Path) {
    let sums_path = dir.join(format!("{NAME}_{VERSION}_SHA256SUMS"));
    let sums = std::fs::read_to_string(&sums_path).unwrap_or_else(|e| panic!("{}: {e}", sums_path.display()));
    let mut listed = Vec::new();
    for line in sums.lines() {
        let (hash, file) =
            line.split_once("  ").unwrap_or_else(|| panic!("SHA256SUMS line {line:?} is not `<hex>  <file>`"));
        let content = std::fs::read(dir.join(file)).unwrap_or_else(|e| panic!("SHA256SUMS lists {file}: {e}"));
        assert_eq!(hash, hex_sha256(&content), "SHA256SUMS line for {file} does not match the file");
        listed.push(file.to_owned());
    }
    let mut expected: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| {
            f.starts_with(&format!("{NAME}_{VERSION}_")) && (f.ends_with(".zip") || f.ends_with("_manifest.json"))
        })
        .collect();
    expected.sort();
    listed.sort();
    assert_eq!(listed, expected, "SHA256SUMS must cover every zip and the manifest, nothing else");
}

#[test]
fn signed_package_has_a_binary_detached_signature_that_verifies() {
    let gpg = tool("gpg", "gnupg");
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("gnupg");
    std::fs::create_dir(&home).unwrap();
    std::fs::set_permissions(&home, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let gpg_in_home =
        |args: &[&str]| Command::new(&gpg).env("GNUPGHOME", &home).arg("--batch").args(args).output().unwrap();

    // RSA, as the registries require (they reject ECC keys); 2048 bits keeps key generation fast.
    let generated = gpg_in_home(&[
        "--passphrase",
        "",
        "--quick-gen-key",
        "terraform-provider-liqo release test <release-test@example.invalid>",
        "rsa2048",
        "sign",
        "1d",
    ]);
    assert!(generated.status.success(), "gpg --quick-gen-key failed:\n{}", text(&generated));
    let listed = gpg_in_home(&["--with-colons", "--list-secret-keys"]);
    let colons = String::from_utf8_lossy(&listed.stdout);
    let fingerprint = colons
        .lines()
        .find_map(|l| l.strip_prefix("fpr:").map(|rest| rest.trim_matches(':').to_owned()))
        .unwrap_or_else(|| panic!("no fingerprint in gpg --list-secret-keys:\n{colons}"));

    let dist = tmp.path().join("dist");
    let binary = dummy_binary(tmp.path());
    let home_str = home.to_str().unwrap();
    let output =
        package(&binary, &dist, "linux", "amd64", &[("GNUPGHOME", home_str), ("GPG_FINGERPRINT", &fingerprint)]);
    assert!(
        text(&output).contains(&format!("signed {NAME}_{VERSION}_SHA256SUMS with key {fingerprint}")),
        "{}",
        text(&output)
    );

    let sums = dist.join(format!("{NAME}_{VERSION}_SHA256SUMS"));
    let sig = dist.join(format!("{NAME}_{VERSION}_SHA256SUMS.sig"));
    let signature = std::fs::read(&sig).unwrap_or_else(|e| panic!("{} was not written: {e}", sig.display()));
    // Binary OpenPGP packets start with a tag byte that has its high bit set; armour would start "-----BEGIN".
    assert!(signature.first().is_some_and(|b| b & 0x80 != 0), "{} is not a binary OpenPGP signature", sig.display());
    let verified = gpg_in_home(&["--verify", sig.to_str().unwrap(), sums.to_str().unwrap()]);
    assert!(verified.status.success(), "gpg --verify rejected the signature:\n{}", text(&verified));
    assert!(text(&verified).contains("Good signature"), "{}", text(&verified));

    // The signature covers SHA256SUMS exactly: a changed checksum list no longer verifies.
    let tampered = tmp.path().join("tampered_SHA256SUMS");
    std::fs::write(&tampered, std::fs::read_to_string(&sums).unwrap().replacen('0', "1", 1)).unwrap();
    let rejected = gpg_in_home(&["--verify", sig.to_str().unwrap(), tampered.to_str().unwrap()]);
    assert!(!rejected.status.success(), "gpg accepted the signature for a modified SHA256SUMS:\n{}", text(&rejected));

    assert_eq!(zip_members(&dist.join(file_name("linux", "amd64"))), [format!("{NAME}_v{VERSION}")]);
    let manifest_path = dist.join(format!("{NAME}_{VERSION}_manifest.json"));
    let manifest: serde_json::Value = serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
    assert_eq!(manifest, serde_json::json!({"version": 1, "metadata": {"protocol_versions": ["6.0"]}}));
    check_sha256sums(&dist);

    // Key generation started an agent for this GNUPGHOME; stop it before the directory goes away.
    let _ = Command::new("gpgconf").env("GNUPGHOME", &home).args(["--kill", "gpg-agent"]).status();
}

#[test]
fn every_platform_gets_the_registry_member_name_and_no_key_means_no_signature() {
    let tmp = tempfile::tempdir().unwrap();
    let dist = tmp.path().join("dist");
    let binary = dummy_binary(tmp.path());
    // A signature left from an earlier signed run would no longer match the rewritten SHA256SUMS.
    std::fs::create_dir_all(&dist).unwrap();
    let stale = dist.join(format!("{NAME}_{VERSION}_SHA256SUMS.sig"));
    std::fs::write(&stale, b"stale").unwrap();

    for (os, arch, member) in [
        ("linux", "amd64", format!("{NAME}_v{VERSION}")),
        ("darwin", "arm64", format!("{NAME}_v{VERSION}")),
        ("windows", "amd64", format!("{NAME}_v{VERSION}.exe")),
    ] {
        let output = package(&binary, &dist, os, arch, &[]);
        let printed = String::from_utf8_lossy(&output.stdout);
        assert_eq!(printed.trim(), dist.join(file_name(os, arch)).to_str().unwrap(), "stdout is the zip's path");
        assert!(text(&output).contains("not signing"), "release.sh must say it did not sign:\n{}", text(&output));
        assert_eq!(zip_members(&dist.join(file_name(os, arch))), [member], "member of the {os}_{arch} zip");
    }
    assert!(!stale.exists(), "{} must be removed when no key is configured", stale.display());
    check_sha256sums(&dist);
    let sums = std::fs::read_to_string(dist.join(format!("{NAME}_{VERSION}_SHA256SUMS"))).unwrap();
    assert_eq!(sums.lines().count(), 4, "three zips and the manifest:\n{sums}");
}
