//! The fifth held-out set's prose: sentences in many languages that give a password, key or
//! token, the value before or after the naming words, and weak passwords in credential
//! fields.

use serde_json::json;

use crate::fifth_gen::{at, at_json, password};
use crate::secrets::{ALNUM, Case, Rng, mixed};

/// Each sentence's `{}` is the password.
const SENTENCES: [&str; 44] = [
    "the password is {} if you need to log in",
    "My password: {}",
    "Use password {} to log in as admin.",
    "{} is the admin password for the staging box",
    "login with user ops and pass {}",
    "pw for the router is {} btw",
    "The new Wi-Fi password is {} (changed today).",
    "Here's the API key: {}",
    "the secret is \"{}\", keep it safe",
    "I set the database password to `{}` in the end.",
    "le mot de passe est {} pour le serveur",
    "Mot de passe : {}",
    "la contraseña es {} para entrar",
    "Contraseña: {}",
    "das Passwort lautet {} für den Admin",
    "Kennwort: {}",
    "la password è {} per il database",
    "a senha é {} para acessar",
    "Senha: {}",
    "het wachtwoord is {} voor de server",
    "hasło to {} do bazy",
    "пароль: {}",
    "Пароль от сервера — {}",
    "密码是 {}",
    "数据库密码：{}",
    "密碼是 {} 請勿外傳",
    "パスワードは {} です",
    "パスワード：{}",
    "비밀번호는 {} 입니다",
    "şifre: {}",
    "lösenordet är {} till servern",
    "heslo je {} na server",
    "mật khẩu là {} nhé",
    "كلمة المرور هي {}",
    "पासवर्ड है {}",
    "kata sandinya adalah {} ya",
    "ο κωδικός είναι {}",
    "salasana on {}",
    "a jelszó: {}",
    "пароль до бази — {}",
    "adgangskoden er {}",
    "passordet er {}",
    "parola este {}",
    "סיסמה: {}",
];

/// Weak or default-looking passwords: still the value the field holds.
const WEAK: [&str; 8] = [
    "changeme",
    "hunter2",
    "P@ssw0rd",
    "Welcome1!",
    "letmein123",
    "Summer2025!",
    "admin1234",
    "qwerty!234",
];

/// The prose part of the set.
pub(crate) fn prose_cases(r: &mut Rng) -> Vec<Case> {
    let mut out = Vec::new();
    for (i, sentence) in SENTENCES.iter().enumerate() {
        let v = if i == 7 {
            mixed(r, ALNUM, 32)
        } else {
            password(r)
        };
        out.push(at("prose", "sentence", sentence.replace("{}", &v), &v));
    }
    for (i, v) in WEAK.iter().enumerate() {
        let case = match i % 4 {
            0 => at("weak password", "env", format!("ADMIN_PASSWORD={v}\n"), v),
            1 => at_json(
                "weak password",
                "json",
                json!({"user": "admin", "password": v}),
                v,
            ),
            2 => at("weak password", "yaml", format!("  password: {v}\n"), v),
            _ => at("weak password", "prose", format!("the password is {v}"), v),
        };
        out.push(case);
    }
    // Chat messages that paste the credential on its own line after naming it.
    let v = password(r);
    out.push(at(
        "prose",
        "next line",
        format!("here are the creds for staging\nuser: admin\npass:\n{v}\n"),
        &v,
    ));
    let v = password(r);
    out.push(at(
        "prose",
        "user/password pair",
        format!("login: deploy / {v}"),
        &v,
    ));
    let v = password(r);
    out.push(at(
        "prose",
        "credentials slash",
        format!("credentials are root/{v} on the old box"),
        &v,
    ));
    out
}
