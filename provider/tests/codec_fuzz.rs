//! Bounded-time mutation fuzzing of the cty msgpack decoder (`protocol::codec::decode`), which parses every
//! config, plan and state Terraform sends.
//!
//! cargo-fuzz (libFuzzer) needs a nightly toolchain, which the machines this suite runs on cannot install, so
//! this is a stable-Rust stand-in that runs with `cargo test`: valid encodings of values of the provider's real
//! schema types (and of `dynamic`, tuple, set and nested map types), with nulls and unknowns at every depth, are
//! mutated by a seeded RNG (bit flips, marker and length bytes, truncation, insertion, deletion, duplication,
//! splices) for a bounded time. Every input must decode to `Ok` or `Err` without panicking, and every `Ok`
//! value must re-encode and decode to the same value.
//!
//! `LIQO_FUZZ_SECONDS` (default 10) bounds the run; `LIQO_FUZZ_SEED` (default fixed, so runs are reproducible)
//! picks the sequence. A failure prints the seed, the iteration, the type and the input in hex.
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use liqo_schema::tf::{Type, Value};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use terraform_provider_liqo::protocol::Provider;
use terraform_provider_liqo::protocol::codec::{decode, encode};
use terraform_provider_liqo::provider::LiqoProvider;

const DEFAULT_SECONDS: u64 = 10;
/// Fixed so that a run without LIQO_FUZZ_SEED explores the same inputs every time (failures reproduce).
const DEFAULT_SEED: u64 = 0x11c0_f022;
/// Valid values generated per type as mutation seeds.
const VALUES_PER_TYPE: usize = 24;
/// Nesting depth of generated values (schemas are shallow; `dynamic` values bring their own types).
const MAX_GEN_DEPTH: usize = 5;

/// Bytes that mean something to a msgpack parser: nil, bools, ext (unknown) markers, str/bin/array/map
/// markers of every width, fix-type boundaries and the extremes of integer payloads.
const INTERESTING: &[u8] = &[
    0x00, 0x01, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9,
    0xca, 0xcb, 0xcc, 0xcd, 0xce, 0xcf, 0xd0, 0xd3, 0xd4, 0xd5, 0xd8, 0xd9, 0xda, 0xdb, 0xdc, 0xdd, 0xde, 0xdf, 0xe0,
    0xff, 0x0c,
];

/// One type under test with valid encodings of values of it.
struct Corpus {
    name: String,
    ty: Type,
    seeds: Vec<Vec<u8>>,
}

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v.trim().parse().unwrap_or_else(|_| panic!("{name}={v:?} is not a whole number")),
        Err(_) => default,
    }
}

/// The provider's own schema types (every resource, data source and the provider block) plus shapes the
/// schemas do not use but the decoder must handle: `dynamic` at the top and inside collections, tuples, sets
/// of objects and deeply nested maps.
fn types_under_test() -> Vec<(String, Type)> {
    let provider = LiqoProvider::default();
    let mut types = vec![("provider block".to_string(), provider.provider_schema().block.implied_type())];
    for r in provider.resources() {
        types.push((format!("resource {}", r.type_name()), r.schema().block.implied_type()));
    }
    for d in provider.data_sources() {
        types.push((format!("data source {}", d.type_name()), d.schema().block.implied_type()));
    }
    types.push(("dynamic".into(), Type::Dynamic));
    types.push(("tuple".into(), Type::Tuple(vec![Type::String, Type::Number, Type::list(Type::Dynamic), Type::Bool])));
    types.push((
        "set of objects".into(),
        Type::set(Type::object([("a", Type::Number), ("b", Type::map(Type::list(Type::Bool))), ("c", Type::Dynamic)])),
    ));
    types.push(("nested maps".into(), Type::map(Type::map(Type::list(Type::set(Type::String))))));
    types.push(("number".into(), Type::Number));
    types.push(("string".into(), Type::String));
    types
}

/// A random value of type `ty`: null or unknown anywhere, numbers in every msgpack width, strings across the
/// fixstr/str8/str16 boundaries, collections of 0–4 elements.
fn gen_value(rng: &mut StdRng, ty: &Type, depth: usize) -> Value {
    match rng.random_range(0..10) {
        0 => return Value::Null,
        1 => return Value::Unknown,
        _ => {}
    }
    let len = |rng: &mut StdRng| if depth >= MAX_GEN_DEPTH { 0 } else { rng.random_range(0..=4) };
    match ty {
        Type::Bool => Value::Bool(rng.random()),
        Type::Number => Value::Number(gen_number(rng)),
        Type::String => Value::String(gen_string(rng)),
        Type::List(t) => Value::List((0..len(rng)).map(|_| gen_value(rng, t, depth + 1)).collect()),
        Type::Set(t) => Value::Set((0..len(rng)).map(|_| gen_value(rng, t, depth + 1)).collect()),
        Type::Map(t) => Value::Map((0..len(rng)).map(|_| (gen_string(rng), gen_value(rng, t, depth + 1))).collect()),
        Type::Object(attrs) => {
            Value::Object(attrs.iter().map(|(k, t)| (k.clone(), gen_value(rng, t, depth + 1))).collect())
        }
        Type::Tuple(ts) => Value::Tuple(ts.iter().map(|t| gen_value(rng, t, depth + 1)).collect()),
        Type::Dynamic => {
            let concrete = gen_type(rng, depth);
            gen_value(rng, &concrete, depth + 1)
        }
    }
}

/// A random concrete type for a `dynamic` position (its encoding then carries the type as JSON).
fn gen_type(rng: &mut StdRng, depth: usize) -> Type {
    let leaf = depth >= MAX_GEN_DEPTH;
    match rng.random_range(0..if leaf { 3 } else { 9 }) {
        0 => Type::Bool,
        1 => Type::Number,
        2 => Type::String,
        3 => Type::list(gen_type(rng, depth + 1)),
        4 => Type::set(gen_type(rng, depth + 1)),
        5 => Type::map(gen_type(rng, depth + 1)),
        6 => Type::Object((0..rng.random_range(0..=3)).map(|i| (format!("a{i}"), gen_type(rng, depth + 1))).collect()),
        7 => Type::Tuple((0..rng.random_range(0..=3)).map(|_| gen_type(rng, depth + 1)).collect()),
        _ => Type::Dynamic,
    }
}

fn gen_number(rng: &mut StdRng) -> f64 {
    match rng.random_range(0..9) {
        0 => f64::from(rng.random_range(-40i32..=200)),
        1 => f64::from(rng.random::<i16>()),
        2 => f64::from(rng.random::<i32>()),
        3 => f64::from(rng.random::<u32>()),
        4 => [i64::MIN as f64, 9.007_199_254_740_992e15, 1e20, u64::MAX as f64][rng.random_range(0..4)],
        5 => f64::from(rng.random_range(-1000i32..1000)) / 8.0,
        6 => [f64::INFINITY, f64::NEG_INFINITY, f64::MIN_POSITIVE, f64::MAX][rng.random_range(0..4)],
        7 => loop {
            let n = f64::from_bits(rng.random());
            if !n.is_nan() {
                break n;
            }
        },
        _ => 51840.0,
    }
}

fn gen_string(rng: &mut StdRng) -> String {
    let len = match rng.random_range(0..12) {
        0 => 31,
        1 => 32,
        2 => 255,
        3 => 256,
        4 if rng.random_range(0..8) == 0 => 65_536,
        _ => rng.random_range(0..12),
    };
    let alphabet = ['a', 'z', '0', '-', '.', '/', ' ', '"', 'é', '🙂', '\u{0}'];
    (0..len).map(|_| alphabet[rng.random_range(0..alphabet.len())]).collect()
}

/// Hand-written encodings the generator never produces but Terraform sends: refined unknowns (extension 12
/// with a refinement map) and numbers in cty's decimal-string form.
fn wire_only_seeds(ty: &Type) -> Vec<Vec<u8>> {
    let mut seeds = vec![
        vec![0xc7, 0x03, 0x0c, 0x81, 0x01, 0xc2],
        vec![0xc7, 0x07, 0x0c, 0x82, 0x01, 0xc2, 0x02, 0xa2, 0x61, 0x62],
    ];
    if *ty == Type::Number {
        // All shorter than 32 bytes: fixstr.
        for decimal in ["123456789012345678901234567890", "-0.1", "1e400"] {
            let mut s = vec![0xa0 | decimal.len() as u8];
            s.extend_from_slice(decimal.as_bytes());
            seeds.push(s);
        }
    }
    seeds
}

fn corpus(rng: &mut StdRng) -> Vec<Corpus> {
    types_under_test()
        .into_iter()
        .map(|(name, ty)| {
            let mut seeds = wire_only_seeds(&ty);
            for _ in 0..VALUES_PER_TYPE {
                let value = gen_value(rng, &ty, 0);
                let bytes = encode(&value, &ty)
                    .unwrap_or_else(|e| panic!("{name}: generated value does not encode ({e}): {value:?}"));
                // The seeds themselves must round-trip, or mutating them would test the generator, not the codec.
                let back = decode(&bytes, &ty)
                    .unwrap_or_else(|e| panic!("{name}: a valid encoding does not decode ({e}): {value:?}"));
                assert_eq!(back, value, "{name}: seed value does not round-trip");
                seeds.push(bytes);
            }
            Corpus { name, ty, seeds }
        })
        .collect()
}

/// Applies 1–4 random mutations; `other` is another seed of the same type, for splices.
fn mutate(rng: &mut StdRng, input: &mut Vec<u8>, other: &[u8]) {
    for _ in 0..rng.random_range(1..=4) {
        let len = input.len();
        let at = |rng: &mut StdRng| if len == 0 { 0 } else { rng.random_range(0..len) };
        match rng.random_range(0..10) {
            0 if len > 0 => {
                let i = at(rng);
                input[i] ^= 1 << rng.random_range(0..8);
            }
            1 if len > 0 => {
                let i = at(rng);
                input[i] = rng.random();
            }
            2 if len > 0 => {
                let i = at(rng);
                input[i] = INTERESTING[rng.random_range(0..INTERESTING.len())];
            }
            3 => input.truncate(at(rng)),
            4 => {
                let i = at(rng);
                let extra: Vec<u8> = (0..rng.random_range(1..=8)).map(|_| rng.random()).collect();
                input.splice(i..i, extra);
            }
            5 if len > 0 => {
                let start = at(rng);
                let end = (start + rng.random_range(1..=8)).min(len);
                input.drain(start..end);
            }
            6 if len > 0 => {
                let start = at(rng);
                let end = (start + rng.random_range(1..=16)).min(len);
                let chunk = input[start..end].to_vec();
                let i = at(rng);
                input.splice(i..i, chunk);
            }
            7 if len > 0 => {
                // A length or integer payload at its extreme: 0xff… or 0x00….
                let i = at(rng);
                let fill = if rng.random() { 0xff } else { 0x00 };
                let n = [1, 2, 4, 8][rng.random_range(0..4)];
                for b in input.iter_mut().skip(i).take(n) {
                    *b = fill;
                }
            }
            8 => {
                let cut = at(rng);
                let from = if other.is_empty() { 0 } else { rng.random_range(0..other.len()) };
                input.truncate(cut);
                input.extend_from_slice(&other[from..]);
            }
            _ => input.extend((0..rng.random_range(1..=4)).map(|_| rng.random::<u8>())),
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" ")
}

/// What went wrong with one input, if anything.
fn check(input: &[u8], ty: &Type) -> Result<bool, String> {
    let decoded = catch_unwind(AssertUnwindSafe(|| decode(input, ty))).map_err(|_| "decode panicked".to_string())?;
    let Ok(value) = decoded else { return Ok(false) };
    let again = catch_unwind(AssertUnwindSafe(|| encode(&value, ty)))
        .map_err(|_| format!("encode panicked on the decoded value {value:?}"))?
        .map_err(|e| format!("the decoded value does not re-encode ({e}): {value:?}"))?;
    match catch_unwind(AssertUnwindSafe(|| decode(&again, ty))) {
        Err(_) => Err(format!("decode panicked on the re-encoding {}", hex(&again))),
        Ok(Err(e)) => Err(format!("the re-encoding {} does not decode ({e}); value {value:?}", hex(&again))),
        Ok(Ok(v)) if v != value => Err(format!("round trip changed the value: {value:?} became {v:?}")),
        Ok(Ok(_)) => Ok(true),
    }
}

#[test]
fn mutated_msgpack_never_panics_and_accepted_values_round_trip() {
    let seconds = env_u64("LIQO_FUZZ_SECONDS", DEFAULT_SECONDS);
    let seed = env_u64("LIQO_FUZZ_SEED", DEFAULT_SEED);
    let mut rng = StdRng::seed_from_u64(seed);
    let corpus = corpus(&mut rng);
    let seed_count: usize = corpus.iter().map(|c| c.seeds.len()).sum();

    let started = Instant::now();
    let budget = Duration::from_secs(seconds);
    let (mut executions, mut accepted) = (0u64, 0u64);
    while started.elapsed() < budget {
        // Check the clock every 256 inputs: a decode takes microseconds.
        for _ in 0..256 {
            let c = &corpus[rng.random_range(0..corpus.len())];
            let mut input = c.seeds[rng.random_range(0..c.seeds.len())].clone();
            let other = &c.seeds[rng.random_range(0..c.seeds.len())];
            mutate(&mut rng, &mut input, other);
            executions += 1;
            match check(&input, &c.ty) {
                Ok(true) => accepted += 1,
                Ok(false) => {}
                Err(problem) => panic!(
                    "codec fuzz (LIQO_FUZZ_SEED={seed}, execution {executions}): {problem}\n  type: {} ({:?})\n  input: {}",
                    c.name,
                    c.ty,
                    hex(&input)
                ),
            }
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "codec fuzz: {executions} executions in {elapsed:.1}s ({:.0}/s) over {} types and {seed_count} seeds; {accepted} \
         mutated inputs decoded (and round-tripped), the rest were rejected with an error; LIQO_FUZZ_SEED={seed}",
        executions as f64 / elapsed,
        corpus.len()
    );
    assert!(executions > 0, "the time budget ({seconds}s) allowed no execution");
}
