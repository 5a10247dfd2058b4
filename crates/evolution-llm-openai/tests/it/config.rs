//! Configuration: TOML, validation, and the API key kept out of sight.

use evolution_llm_openai::{ConfigError, OpenAiConfig, OpenAiProvider};

#[test]
fn config_reads_from_toml_with_defaults() {
    let text = r#"
        base_url = "https://api.deepseek.com/v1"
        model = "deepseek-reasoner"
        api_key_env = "DEEPSEEK_API_KEY"
        max_concurrency = 4
        temperature = 0.0
        stream = true

        [timeouts]
        first_byte_ms = 30000
        total_ms = 120000

        [retry]
        max_retries = 5
        retry_possibly_billed = false
    "#;
    let c: OpenAiConfig = toml::from_str(text).expect("valid toml");
    assert_eq!(c.model, "deepseek-reasoner");
    assert_eq!(c.api_key_env.as_deref(), Some("DEEPSEEK_API_KEY"));
    assert_eq!(c.max_concurrency, 4);
    assert!(c.stream && !c.json_mode && c.supports_json_schema);
    assert_eq!(c.timeouts.first_byte_ms, 30_000);
    assert_eq!(
        c.timeouts.connect_ms,
        OpenAiConfig::new("x", "y").timeouts.connect_ms
    );
    assert_eq!(c.retry.max_retries, 5);
    assert!(!c.retry.retry_possibly_billed);

    let minimal: OpenAiConfig =
        toml::from_str("base_url = \"http://127.0.0.1:8080/v1\"\nmodel = \"m\"").expect("minimal");
    assert_eq!(minimal, OpenAiConfig::new("http://127.0.0.1:8080/v1", "m"));

    let typo =
        toml::from_str::<OpenAiConfig>("base_url = \"x\"\nmodel = \"m\"\napi_key = \"sk-1\"");
    assert!(
        typo.is_err(),
        "unknown fields (a key pasted inline) are rejected"
    );
}

#[test]
fn api_key_comes_from_the_named_variable_and_is_never_printed() {
    let mut config = OpenAiConfig::new("http://127.0.0.1:9/v1", "m");
    config.api_key_env = Some("EVOLUTION_TEST_SURELY_UNSET_KEY_VAR".into());
    match OpenAiProvider::new(config.clone()) {
        Err(ConfigError::MissingApiKey { var }) => {
            assert_eq!(var, "EVOLUTION_TEST_SURELY_UNSET_KEY_VAR")
        }
        other => panic!("expected MissingApiKey, got {other:?}"),
    }
    let llm = OpenAiProvider::with_api_key(config, "sk-very-secret-123").expect("config");
    let shown = format!("{llm:?}");
    assert!(!shown.contains("sk-very-secret-123"), "{shown}");
    assert!(shown.contains("redacted"), "{shown}");
}

#[test]
fn bad_configurations_are_typed_errors() {
    let bad_url = OpenAiProvider::new(OpenAiConfig::new("ftp://h/v1", "m"));
    assert!(
        matches!(bad_url, Err(ConfigError::BadBaseUrl { .. })),
        "{bad_url:?}"
    );
    let mut c = OpenAiConfig::new("http://h/v1", "m");
    c.max_concurrency = 0;
    assert!(matches!(
        OpenAiProvider::new(c),
        Err(ConfigError::Invalid(_))
    ));
    let mut c = OpenAiConfig::new("http://h/v1", "m");
    c.retry.factor = f32::NAN;
    assert!(matches!(
        OpenAiProvider::new(c),
        Err(ConfigError::Invalid(_))
    ));
    let c = OpenAiConfig::new("http://h/v1", "m");
    assert!(matches!(
        OpenAiProvider::with_api_key(c, "bad\nkey"),
        Err(ConfigError::Invalid(_))
    ));
}

#[test]
fn the_usual_key_variable_follows_the_host() {
    use evolution_llm_openai::usual_api_key_vars;
    assert_eq!(
        usual_api_key_vars("https://api.deepseek.com/v1"),
        ["DEEPSEEK_API_KEY", "OPENAI_API_KEY"]
    );
    assert_eq!(
        usual_api_key_vars("https://API.DeepSeek.com"),
        ["DEEPSEEK_API_KEY", "OPENAI_API_KEY"]
    );
    assert_eq!(
        usual_api_key_vars("https://openrouter.ai/api/v1"),
        ["OPENROUTER_API_KEY", "OPENAI_API_KEY"]
    );
    assert_eq!(
        usual_api_key_vars("https://api.openai.com/v1"),
        ["OPENAI_API_KEY"]
    );
    assert_eq!(
        usual_api_key_vars("http://127.0.0.1:8080/v1"),
        ["OPENAI_API_KEY"]
    );
    // A look-alike host is not the provider.
    assert_eq!(
        usual_api_key_vars("https://notdeepseek.com/v1"),
        ["OPENAI_API_KEY"]
    );
    assert_eq!(usual_api_key_vars("not a url"), ["OPENAI_API_KEY"]);
}
