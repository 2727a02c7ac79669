use super::*;

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn round_trip(v: &Value, ty: &Type, expected_hex: &str) {
    let bytes = encode(v, ty).unwrap();
    assert_eq!(bytes, hex(expected_hex), "encoding of {v:?}");
    assert_eq!(&decode(&bytes, ty).unwrap(), v, "decoding of {expected_hex}");
}

#[test]
fn primitives_null_and_unknown() {
    round_trip(&Value::Null, &Type::String, "c0");
    round_trip(&Value::Unknown, &Type::String, "d4 00 00");
    round_trip(&Value::Bool(true), &Type::Bool, "c3");
    round_trip(&Value::Bool(false), &Type::Bool, "c2");
    round_trip(&Value::string("hi"), &Type::String, "a2 68 69");
    round_trip(&Value::string(""), &Type::String, "a0");
    // 32 bytes: str8, as go-msgpack writes it.
    round_trip(&Value::string("a".repeat(32)), &Type::String, &format!("d9 20 {}", "61 ".repeat(32)));
}

#[test]
fn numbers_use_compact_ints_and_float64() {
    round_trip(&Value::Number(0.0), &Type::Number, "00");
    round_trip(&Value::Number(127.0), &Type::Number, "7f");
    round_trip(&Value::Number(128.0), &Type::Number, "cc 80");
    round_trip(&Value::Number(51840.0), &Type::Number, "cd ca 80");
    round_trip(&Value::Number(70000.0), &Type::Number, "ce 00 01 11 70");
    round_trip(&Value::Number(-1.0), &Type::Number, "ff");
    round_trip(&Value::Number(-32.0), &Type::Number, "e0");
    round_trip(&Value::Number(-33.0), &Type::Number, "d0 df");
    round_trip(&Value::Number(-1000.0), &Type::Number, "d1 fc 18");
    round_trip(&Value::Number(1.5), &Type::Number, "cb 3f f8 00 00 00 00 00 00");
    // 1e20 is an exact float64 but no int64: cty writes float64.
    round_trip(&Value::Number(1e20), &Type::Number, "cb 44 15 af 1d 78 b5 8c 40");
    round_trip(&Value::Number(f64::INFINITY), &Type::Number, "cb 7f f0 00 00 00 00 00 00");
}

#[test]
fn numbers_decode_from_every_cty_form() {
    let n = |h: &str| decode(&hex(h), &Type::Number).unwrap();
    assert_eq!(n("d3 ff ff ff ff ff ff ff fe"), Value::Number(-2.0));
    assert_eq!(n("cf 00 00 00 00 00 00 01 00"), Value::Number(256.0));
    assert_eq!(n("ca 3f c0 00 00"), Value::Number(1.5));
    // cty's string form for numbers beyond int64/float64 precision.
    assert_eq!(n("a5 31 65 33 30 30"), Value::Number(1e300));
    assert!(decode(&hex("a3 61 62 63"), &Type::Number).is_err());
}

#[test]
fn refined_unknowns_decode_as_unknown() {
    // ext 12 with body {1: false} ("definitely not null"), as Terraform sends for refined unknowns.
    assert_eq!(decode(&hex("c7 03 0c 81 01 c2"), &Type::String).unwrap(), Value::Unknown);
    // String-prefix refinement {1: false, 2: "ab"}.
    assert_eq!(decode(&hex("c7 07 0c 82 01 c2 02 a2 61 62"), &Type::String).unwrap(), Value::Unknown);
    // Any extension of length ≤ 1 is a plain unknown.
    assert_eq!(decode(&hex("d4 05 00"), &Type::Number).unwrap(), Value::Unknown);
    assert!(decode(&hex("d5 07 00 00"), &Type::Number).is_err());
}

#[test]
fn objects_sort_attributes_and_keep_nulls_and_unknowns_at_depth() {
    let ty = Type::object([
        ("name", Type::String),
        ("id", Type::String),
        ("server", Type::object([("port", Type::Number), ("addresses", Type::list(Type::String))])),
        ("labels", Type::map(Type::String)),
    ]);
    let v = Value::object([
        ("id", Value::Unknown),
        ("labels", Value::Map([("a".to_string(), Value::Unknown), ("b".to_string(), Value::Null)].into())),
        ("name", Value::string("x")),
        (
            "server",
            Value::object([
                ("addresses", Value::List(vec![Value::string("h"), Value::Unknown])),
                ("port", Value::Null),
            ]),
        ),
    ]);
    round_trip(
        &v,
        &ty,
        "84 a2 69 64 d4 00 00 \
         a6 6c 61 62 65 6c 73 82 a1 61 d4 00 00 a1 62 c0 \
         a4 6e 61 6d 65 a1 78 \
         a6 73 65 72 76 65 72 82 a9 61 64 64 72 65 73 73 65 73 92 a1 68 d4 00 00 a4 70 6f 72 74 c0",
    );
}

#[test]
fn missing_object_attributes_encode_as_null() {
    let ty = Type::object([("a", Type::String), ("b", Type::Bool)]);
    let bytes = encode(&Value::object([("b", Value::Bool(true))]), &ty).unwrap();
    assert_eq!(bytes, hex("82 a1 61 c0 a1 62 c3"));
}

#[test]
fn sets_tuples_and_lists_are_arrays() {
    round_trip(&Value::Set(vec![Value::string("a"), Value::string("b")]), &Type::set(Type::String), "92 a1 61 a1 62");
    round_trip(
        &Value::Tuple(vec![Value::string("a"), Value::Number(1.0)]),
        &Type::Tuple(vec![Type::String, Type::Number]),
        "92 a1 61 01",
    );
    round_trip(&Value::List(vec![]), &Type::list(Type::Number), "90");
}

#[test]
fn dynamic_values_carry_their_json_type() {
    // ["string", "hi"] with the type as msgpack bin, as go-cty's EncodeBytes writes it.
    round_trip(&Value::string("hi"), &Type::Dynamic, "92 c4 08 22 73 74 72 69 6e 67 22 a2 68 69");
    round_trip(&Value::Null, &Type::Dynamic, "c0");
    round_trip(&Value::Unknown, &Type::Dynamic, "d4 00 00");
    let v = Value::object([("n", Value::Number(1.0))]);
    let bytes = encode(&v, &Type::Dynamic).unwrap();
    let type_json = br#"["object",{"n":"number"}]"#;
    let mut expected = vec![0x92, 0xc4, type_json.len() as u8];
    expected.extend_from_slice(type_json);
    expected.extend_from_slice(&hex("81 a1 6e 01"));
    assert_eq!(bytes, expected);
    assert_eq!(decode(&bytes, &Type::Dynamic).unwrap(), v);
}

#[test]
fn errors_name_the_attribute_path() {
    let ty = Type::object([("server", Type::object([("port", Type::Number)]))]);
    let err = decode(&hex("81 a6 73 65 72 76 65 72 81 a4 70 6f 72 74 a1 78"), &ty).unwrap_err();
    assert_eq!(err.to_string(), r#"server.port: number is required, got the string "x""#);
    let err = decode(&hex("81 a3 62 61 64 c0"), &ty).unwrap_err();
    assert_eq!(err.to_string(), "bad: unsupported attribute");
    let err = encode(&Value::object([("server", Value::object([("port", Value::string("x"))]))]), &ty).unwrap_err();
    assert_eq!(err.to_string(), "server.port: expected number, got a string value");
    let m = Type::map(Type::list(Type::Bool));
    let err = decode(&hex("81 a3 63 70 75 91 01"), &m).unwrap_err();
    assert_eq!(err.to_string(), r#"["cpu"][0]: bool is required"#);
}

#[test]
fn hostile_inputs_are_errors_not_panics() {
    let ty = Type::object([("a", Type::list(Type::String)), ("d", Type::Dynamic)]);
    for input in [
        "",
        "81",
        "81 a1",
        "81 a1 61 dd ff ff ff ff",    // array claiming 4 billion elements
        "81 a1 61 91 db ff ff ff ff", // str32 longer than the input
        "81 a1 64 92 c4 05 5b 5b 5b 5b 5b 00",
        "81 a1 64 92 c4 08 22 73 74 72 69 6e 67 22", // dynamic without its value
        "c9 ff ff ff ff 00",                         // ext32 longer than the input
        "c1",
        "81 a1 61 90 00", // trailing byte
    ] {
        assert!(decode(&hex(input), &ty).is_err(), "{input} should not decode");
    }
    // Dynamic values nested beyond MAX_DEPTH: ["list","dynamic"] repeated.
    let mut deep = Vec::new();
    let t = br#"["list","dynamic"]"#;
    for _ in 0..(MAX_DEPTH + 2) {
        deep.extend_from_slice(&[0x92, 0xc4, t.len() as u8]);
        deep.extend_from_slice(t);
        deep.push(0x91);
    }
    deep.push(0xc0);
    let err = decode(&deep, &Type::Dynamic).unwrap_err();
    assert!(err.message.contains("nested deeper"), "{err}");
}

#[test]
fn json_state_decodes_with_the_current_type() {
    let ty = Type::object([
        ("id", Type::String),
        ("port", Type::Number),
        ("tags", Type::set(Type::String)),
        ("extra", Type::Dynamic),
        ("new_attr", Type::Bool),
    ]);
    let json = br#"{"id":"a","port":51840,"tags":["x"],"extra":{"value":["a",1],"type":["tuple",["string","number"]]},"dropped":true}"#;
    let v = decode_json(json, &ty).unwrap();
    assert_eq!(
        v,
        Value::object([
            ("id", Value::string("a")),
            ("port", Value::Number(51840.0)),
            ("tags", Value::Set(vec![Value::string("x")])),
            ("extra", Value::Tuple(vec![Value::string("a"), Value::Number(1.0)])),
            ("new_attr", Value::Null),
        ])
    );
    let err = decode_json(br#"{"port":"many"}"#, &ty).unwrap_err();
    assert_eq!(err.to_string(), "port: number is required");
}
