//! Base values of the non-key columns: IMDB-like text of realistic length
//! (names as "Last, First", titles of a few words, release dates as
//! "USA:15 May 2005", ratings as "7.3"), NULLs at rates like IMDB's where
//! the schema allows them, years skewed towards recent ones.
//!
//! A value may depend on columns to its left in the same row (`info` on
//! `info_type_id`, an episode's numbers on `kind_id`): [`base_value`] sees
//! the row built so far. Keys and foreign keys are not made here.

use rand::RngExt;
use rand::rngs::Xoshiro256PlusPlus as Rng;
use rand::seq::IndexedRandom;

use super::pred::Value;
use super::schema::{ColType, Table};
use super::vocab::*;

/// `kind_type` id of episodes and of tv series.
pub const KIND_EPISODE: i64 = 7;
pub const KIND_TV_SERIES: i64 = 2;

/// What a column holds, for [`base_value`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Md5,
    Soundex,
    ImdbIndex,
    ImdbId,
    Title,
    Year,
    EpisodeNumber { max: i64 },
    SeriesYears,
    PersonName,
    Gender,
    CharacterName,
    CompanyName,
    CountryCode,
    Keyword,
    CompanyNote,
    CastNote,
    NrOrder,
    Info,
    InfoNote,
    OtherInt,
    OtherText,
}

/// The column's kind and the share of its rows that are NULL (where the
/// schema allows NULL).
fn kind_of(table: &str, column: &str) -> (Kind, f64) {
    match (table, column) {
        (_, "md5sum") => (Kind::Md5, 0.0),
        (_, "phonetic_code" | "name_pcode_cf" | "name_pcode_nf" | "name_pcode_sf" | "surname_pcode") => {
            (Kind::Soundex, 0.1)
        }
        (_, "imdb_index") => (Kind::ImdbIndex, 0.85),
        (_, "imdb_id") => (Kind::ImdbId, 0.9),
        ("title" | "aka_title", "title") => (Kind::Title, 0.0),
        (_, "production_year") => (Kind::Year, 0.05),
        (_, "season_nr") => (Kind::EpisodeNumber { max: 20 }, 0.1),
        (_, "episode_nr") => (Kind::EpisodeNumber { max: 200 }, 0.1),
        ("title", "series_years") => (Kind::SeriesYears, 0.0),
        ("name" | "aka_name", "name") => (Kind::PersonName, 0.0),
        ("name", "gender") => (Kind::Gender, 0.15),
        ("char_name", "name") => (Kind::CharacterName, 0.0),
        ("company_name", "name") => (Kind::CompanyName, 0.0),
        ("company_name", "country_code") => (Kind::CountryCode, 0.1),
        ("keyword", "keyword") => (Kind::Keyword, 0.0),
        ("movie_companies", "note") => (Kind::CompanyNote, 0.4),
        ("aka_title", "note") => (Kind::CompanyNote, 0.6),
        ("cast_info", "note") => (Kind::CastNote, 0.65),
        ("cast_info", "nr_order") => (Kind::NrOrder, 0.4),
        ("movie_info" | "movie_info_idx" | "person_info", "info") => (Kind::Info, 0.0),
        ("movie_info", "note") => (Kind::InfoNote, 0.8),
        ("person_info", "note") => (Kind::PersonName, 0.7),
        (_, _) => (Kind::OtherText, 0.5),
    }
}

/// A value for `table.columns[col]`, given the row's earlier columns
/// (`None` where unknown).
pub fn base_value(table: &Table, col: usize, row: &[Option<Value>], rng: &mut Rng) -> Value {
    let c = &table.columns[col];
    let earlier = |name: &str| -> Option<i64> {
        match row.get(table.column(name)?)? {
            Some(Value::Int(v)) => Some(*v),
            _ => None,
        }
    };
    let (mut kind, null_share) = kind_of(&table.name, &c.name);
    if kind == Kind::OtherText && c.ty == ColType::Int {
        kind = Kind::OtherInt;
    }
    if c.nullable && rng.random_bool(null_share) {
        return Value::Null;
    }
    let text = |s: &str| Value::Text(s.to_string());
    let v = match kind {
        Kind::Md5 => Value::Text(hex(rng, 32)),
        Kind::Soundex => Value::Text(soundex_like(rng)),
        Kind::ImdbIndex => text(["I", "II", "III"][rng.random_range(0..3)]),
        Kind::ImdbId => Value::Int(rng.random_range(1..3_000_000)),
        Kind::Title | Kind::OtherText => Value::Text(title_text(rng)),
        Kind::Year => Value::Int(year(rng)),
        Kind::EpisodeNumber { max } if earlier("kind_id") == Some(KIND_EPISODE) => Value::Int(rng.random_range(1..max)),
        Kind::EpisodeNumber { .. } => Value::Null,
        Kind::SeriesYears if earlier("kind_id") == Some(KIND_TV_SERIES) => {
            let from = rng.random_range(1950..2015);
            Value::Text(format!("{from}-{}", from + rng.random_range(0..10)))
        }
        Kind::SeriesYears => Value::Null,
        Kind::PersonName => Value::Text(person_name(rng)),
        Kind::Gender => text(if rng.random_bool(0.65) { "m" } else { "f" }),
        Kind::CharacterName => Value::Text(character_name(rng)),
        Kind::CompanyName => Value::Text(company_name(rng)),
        Kind::CountryCode => text(skewed(COUNTRY_CODES, rng)),
        Kind::Keyword => Value::Text(keyword(rng)),
        Kind::CompanyNote => Value::Text(company_note(rng)),
        Kind::CastNote => text(skewed(CAST_NOTES, rng)),
        Kind::NrOrder => Value::Int(rng.random_range(1..60)),
        Kind::Info => {
            let ty = earlier("info_type_id").and_then(|id| INFO_TYPES.get(usize::try_from(id - 1).ok()?)).copied();
            Value::Text(info_text(ty.unwrap_or("plot"), rng))
        }
        Kind::InfoNote => Value::Text(info_note(rng)),
        Kind::OtherInt => Value::Int(rng.random_range(1..1000)),
    };
    fit(v, c.ty)
}

/// Cuts text to the column's `varchar(n)`.
pub fn fit(v: Value, ty: ColType) -> Value {
    match (v, ty) {
        (Value::Text(s), ColType::Text { max_chars: Some(n) }) if s.chars().count() > n => {
            Value::Text(s.chars().take(n).collect())
        }
        (v, _) => v,
    }
}

/// An item of a list ordered most frequent first.
fn skewed<'a>(items: &[&'a str], rng: &mut Rng) -> &'a str {
    items[skewed_index(items.len(), rng)]
}

/// An index in 0..n (n > 0), rank r with weight ~1/(r+1): the inverse CDF
/// of a continuous 1/x over [1, n+1).
pub fn skewed_index(n: usize, rng: &mut Rng) -> usize {
    let u: f64 = rng.random_range(0.0..1.0);
    (((n as f64 + 1.0).powf(u) - 1.0) as usize).min(n.saturating_sub(1))
}

fn hex(rng: &mut Rng, n: usize) -> String {
    (0..n).map(|_| char::from_digit(rng.random_range(0..16), 16).unwrap_or('0')).collect()
}

fn soundex_like(rng: &mut Rng) -> String {
    let letter = (b'A' + rng.random_range(0..26u8)) as char;
    format!("{letter}{}", rng.random_range(100..700))
}

fn year(rng: &mut Rng) -> i64 {
    match rng.random_range(0..10) {
        0 => rng.random_range(1890..1950),
        1..=3 => rng.random_range(1950..1990),
        _ => rng.random_range(1990..2016),
    }
}

fn title_text(rng: &mut Rng) -> String {
    let n = rng.random_range(1..5);
    let words: Vec<&str> = (0..n).map(|_| *TITLE_WORDS.choose(rng).unwrap_or(&"Film")).collect();
    words.join(" ")
}

fn person_name(rng: &mut Rng) -> String {
    let last = LAST_NAMES.choose(rng).unwrap_or(&"Smith");
    let first = FIRST_NAMES.choose(rng).unwrap_or(&"John");
    format!("{last}, {first}")
}

fn character_name(rng: &mut Rng) -> String {
    if rng.random_bool(0.5) {
        CHARACTER_WORDS.choose(rng).unwrap_or(&"Himself").to_string()
    } else {
        format!("{} {}", FIRST_NAMES.choose(rng).unwrap_or(&"John"), LAST_NAMES.choose(rng).unwrap_or(&"Lee"))
    }
}

fn company_name(rng: &mut Rng) -> String {
    let a = LAST_NAMES.choose(rng).unwrap_or(&"Smith");
    let b = COMPANY_WORDS.choose(rng).unwrap_or(&"Film");
    if rng.random_bool(0.3) {
        format!("{a} {b} {}", COMPANY_WORDS.choose(rng).unwrap_or(&"Group"))
    } else {
        format!("{a} {b}")
    }
}

fn keyword(rng: &mut Rng) -> String {
    if rng.random_bool(0.05) {
        return KEYWORDS.choose(rng).unwrap_or(&"murder").to_string();
    }
    let a = TITLE_WORDS.choose(rng).unwrap_or(&"night").to_lowercase();
    let b = CHARACTER_WORDS.choose(rng).unwrap_or(&"man").to_lowercase();
    let c = LAST_NAMES.choose(rng).unwrap_or(&"smith").to_lowercase();
    format!("{a}-{b}-{c}")
}

fn company_note(rng: &mut Rng) -> String {
    let mut parts = Vec::new();
    if rng.random_bool(0.6) {
        parts.push(format!("({})", year(rng)));
    }
    for _ in 0..rng.random_range(1..3) {
        parts.push(skewed(COMPANY_NOTES, rng).to_string());
    }
    parts.join(" ")
}

fn info_note(rng: &mut Rng) -> String {
    match rng.random_range(0..3) {
        0 => "(internet)".into(),
        1 => format!("({})", COUNTRIES.choose(rng).unwrap_or(&"USA")),
        _ => format!("(limited) ({})", year(rng)),
    }
}

const MONTHS: &[&str] = &[
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// An `info` value of the given info type, as IMDB writes it.
fn info_text(info_type: &str, rng: &mut Rng) -> String {
    match info_type {
        "genres" => skewed(GENRES, rng).into(),
        "countries" => skewed(COUNTRIES, rng).into(),
        "languages" => skewed(LANGUAGES, rng).into(),
        "release dates" => format!(
            "{}:{} {} {}",
            skewed(COUNTRIES, rng),
            rng.random_range(1..29),
            MONTHS.choose(rng).unwrap_or(&"May"),
            year(rng)
        ),
        "runtimes" => format!("{}", rng.random_range(5..200)),
        "votes" => format!("{}", rng.random_range(5..200_000)),
        "rating" => format!("{}.{}", rng.random_range(1..10), rng.random_range(0..10)),
        "votes distribution" => (0..10).map(|_| char::from(b'0' + rng.random_range(0..10u8))).collect(),
        "top 250 rank" => format!("{}", rng.random_range(1..251)),
        "bottom 10 rank" => format!("{}", rng.random_range(1..11)),
        "budget" | "gross" => format!("${},000", rng.random_range(1..200_000)),
        "birth date" | "death date" => {
            format!("{} {} {}", rng.random_range(1..29), MONTHS.choose(rng).unwrap_or(&"May"), year(rng))
        }
        "height" => format!("{}' {}\"", rng.random_range(4..7), rng.random_range(0..12)),
        "color info" => (if rng.random_bool(0.8) { "Color" } else { "Black and White" }).into(),
        "sound mix" => (if rng.random_bool(0.7) { "Stereo" } else { "Mono" }).into(),
        _ => {
            let n = rng.random_range(4..16);
            let words: Vec<String> = (0..n).map(|_| TITLE_WORDS.choose(rng).unwrap_or(&"the").to_lowercase()).collect();
            format!("{}.", words.join(" "))
        }
    }
}
