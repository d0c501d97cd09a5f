// The join graphs of the 113 JOB queries, extracted from
// ../shared/workloads/job/queries/<name>.sql: the FROM list's aliases, and every
// predicate `alias.column = alias.column` of the WHERE clause. `filtered` marks a
// relation the query also filters with a predicate of its own. Included by
// join_order_time.rs.

/// JOB 1a: 5 relations, 5 join predicates.
const Q1A: JobQuery = JobQuery {
    name: "1a",
    relations: &[("ct", "company_type", true), ("it", "info_type", true), ("mc", "movie_companies", true), ("mi_idx", "movie_info_idx", false), ("t", "title", false)],
    joins: &[("ct", "id", "mc", "company_type_id"), ("t", "id", "mc", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("mc", "movie_id", "mi_idx", "movie_id"), ("it", "id", "mi_idx", "info_type_id")],
};
/// JOB 1b: 5 relations, 5 join predicates.
const Q1B: JobQuery = JobQuery {
    name: "1b",
    relations: &[("ct", "company_type", true), ("it", "info_type", true), ("mc", "movie_companies", true), ("mi_idx", "movie_info_idx", false), ("t", "title", true)],
    joins: &[("ct", "id", "mc", "company_type_id"), ("t", "id", "mc", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("mc", "movie_id", "mi_idx", "movie_id"), ("it", "id", "mi_idx", "info_type_id")],
};
/// JOB 1c: 5 relations, 5 join predicates.
const Q1C: JobQuery = JobQuery {
    name: "1c",
    relations: &[("ct", "company_type", true), ("it", "info_type", true), ("mc", "movie_companies", true), ("mi_idx", "movie_info_idx", false), ("t", "title", true)],
    joins: &[("ct", "id", "mc", "company_type_id"), ("t", "id", "mc", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("mc", "movie_id", "mi_idx", "movie_id"), ("it", "id", "mi_idx", "info_type_id")],
};
/// JOB 1d: 5 relations, 5 join predicates.
const Q1D: JobQuery = JobQuery {
    name: "1d",
    relations: &[("ct", "company_type", true), ("it", "info_type", true), ("mc", "movie_companies", true), ("mi_idx", "movie_info_idx", false), ("t", "title", true)],
    joins: &[("ct", "id", "mc", "company_type_id"), ("t", "id", "mc", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("mc", "movie_id", "mi_idx", "movie_id"), ("it", "id", "mi_idx", "info_type_id")],
};
/// JOB 2a: 5 relations, 5 join predicates.
const Q2A: JobQuery = JobQuery {
    name: "2a",
    relations: &[("cn", "company_name", true), ("k", "keyword", true), ("mc", "movie_companies", false), ("mk", "movie_keyword", false), ("t", "title", false)],
    joins: &[("cn", "id", "mc", "company_id"), ("mc", "movie_id", "t", "id"), ("t", "id", "mk", "movie_id"), ("mk", "keyword_id", "k", "id"), ("mc", "movie_id", "mk", "movie_id")],
};
/// JOB 2b: 5 relations, 5 join predicates.
const Q2B: JobQuery = JobQuery {
    name: "2b",
    relations: &[("cn", "company_name", true), ("k", "keyword", true), ("mc", "movie_companies", false), ("mk", "movie_keyword", false), ("t", "title", false)],
    joins: &[("cn", "id", "mc", "company_id"), ("mc", "movie_id", "t", "id"), ("t", "id", "mk", "movie_id"), ("mk", "keyword_id", "k", "id"), ("mc", "movie_id", "mk", "movie_id")],
};
/// JOB 2c: 5 relations, 5 join predicates.
const Q2C: JobQuery = JobQuery {
    name: "2c",
    relations: &[("cn", "company_name", true), ("k", "keyword", true), ("mc", "movie_companies", false), ("mk", "movie_keyword", false), ("t", "title", false)],
    joins: &[("cn", "id", "mc", "company_id"), ("mc", "movie_id", "t", "id"), ("t", "id", "mk", "movie_id"), ("mk", "keyword_id", "k", "id"), ("mc", "movie_id", "mk", "movie_id")],
};
/// JOB 2d: 5 relations, 5 join predicates.
const Q2D: JobQuery = JobQuery {
    name: "2d",
    relations: &[("cn", "company_name", true), ("k", "keyword", true), ("mc", "movie_companies", false), ("mk", "movie_keyword", false), ("t", "title", false)],
    joins: &[("cn", "id", "mc", "company_id"), ("mc", "movie_id", "t", "id"), ("t", "id", "mk", "movie_id"), ("mk", "keyword_id", "k", "id"), ("mc", "movie_id", "mk", "movie_id")],
};
/// JOB 3a: 4 relations, 4 join predicates.
const Q3A: JobQuery = JobQuery {
    name: "3a",
    relations: &[("k", "keyword", true), ("mi", "movie_info", true), ("mk", "movie_keyword", false), ("t", "title", true)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mk", "movie_id"), ("mk", "movie_id", "mi", "movie_id"), ("k", "id", "mk", "keyword_id")],
};
/// JOB 3b: 4 relations, 4 join predicates.
const Q3B: JobQuery = JobQuery {
    name: "3b",
    relations: &[("k", "keyword", true), ("mi", "movie_info", true), ("mk", "movie_keyword", false), ("t", "title", true)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mk", "movie_id"), ("mk", "movie_id", "mi", "movie_id"), ("k", "id", "mk", "keyword_id")],
};
/// JOB 3c: 4 relations, 4 join predicates.
const Q3C: JobQuery = JobQuery {
    name: "3c",
    relations: &[("k", "keyword", true), ("mi", "movie_info", true), ("mk", "movie_keyword", false), ("t", "title", true)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mk", "movie_id"), ("mk", "movie_id", "mi", "movie_id"), ("k", "id", "mk", "keyword_id")],
};
/// JOB 4a: 5 relations, 5 join predicates.
const Q4A: JobQuery = JobQuery {
    name: "4a",
    relations: &[("it", "info_type", true), ("k", "keyword", true), ("mi_idx", "movie_info_idx", true), ("mk", "movie_keyword", false), ("t", "title", true)],
    joins: &[("t", "id", "mi_idx", "movie_id"), ("t", "id", "mk", "movie_id"), ("mk", "movie_id", "mi_idx", "movie_id"), ("k", "id", "mk", "keyword_id"), ("it", "id", "mi_idx", "info_type_id")],
};
/// JOB 4b: 5 relations, 5 join predicates.
const Q4B: JobQuery = JobQuery {
    name: "4b",
    relations: &[("it", "info_type", true), ("k", "keyword", true), ("mi_idx", "movie_info_idx", true), ("mk", "movie_keyword", false), ("t", "title", true)],
    joins: &[("t", "id", "mi_idx", "movie_id"), ("t", "id", "mk", "movie_id"), ("mk", "movie_id", "mi_idx", "movie_id"), ("k", "id", "mk", "keyword_id"), ("it", "id", "mi_idx", "info_type_id")],
};
/// JOB 4c: 5 relations, 5 join predicates.
const Q4C: JobQuery = JobQuery {
    name: "4c",
    relations: &[("it", "info_type", true), ("k", "keyword", true), ("mi_idx", "movie_info_idx", true), ("mk", "movie_keyword", false), ("t", "title", true)],
    joins: &[("t", "id", "mi_idx", "movie_id"), ("t", "id", "mk", "movie_id"), ("mk", "movie_id", "mi_idx", "movie_id"), ("k", "id", "mk", "keyword_id"), ("it", "id", "mi_idx", "info_type_id")],
};
/// JOB 5a: 5 relations, 5 join predicates.
const Q5A: JobQuery = JobQuery {
    name: "5a",
    relations: &[("ct", "company_type", true), ("it", "info_type", false), ("mc", "movie_companies", true), ("mi", "movie_info", true), ("t", "title", true)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mc", "movie_id"), ("mc", "movie_id", "mi", "movie_id"), ("ct", "id", "mc", "company_type_id"), ("it", "id", "mi", "info_type_id")],
};
/// JOB 5b: 5 relations, 5 join predicates.
const Q5B: JobQuery = JobQuery {
    name: "5b",
    relations: &[("ct", "company_type", true), ("it", "info_type", false), ("mc", "movie_companies", true), ("mi", "movie_info", true), ("t", "title", true)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mc", "movie_id"), ("mc", "movie_id", "mi", "movie_id"), ("ct", "id", "mc", "company_type_id"), ("it", "id", "mi", "info_type_id")],
};
/// JOB 5c: 5 relations, 5 join predicates.
const Q5C: JobQuery = JobQuery {
    name: "5c",
    relations: &[("ct", "company_type", true), ("it", "info_type", false), ("mc", "movie_companies", true), ("mi", "movie_info", true), ("t", "title", true)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mc", "movie_id"), ("mc", "movie_id", "mi", "movie_id"), ("ct", "id", "mc", "company_type_id"), ("it", "id", "mi", "info_type_id")],
};
/// JOB 6a: 5 relations, 5 join predicates.
const Q6A: JobQuery = JobQuery {
    name: "6a",
    relations: &[("ci", "cast_info", false), ("k", "keyword", true), ("mk", "movie_keyword", false), ("n", "name", true), ("t", "title", true)],
    joins: &[("k", "id", "mk", "keyword_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "ci", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("n", "id", "ci", "person_id")],
};
/// JOB 6b: 5 relations, 5 join predicates.
const Q6B: JobQuery = JobQuery {
    name: "6b",
    relations: &[("ci", "cast_info", false), ("k", "keyword", true), ("mk", "movie_keyword", false), ("n", "name", true), ("t", "title", true)],
    joins: &[("k", "id", "mk", "keyword_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "ci", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("n", "id", "ci", "person_id")],
};
/// JOB 6c: 5 relations, 5 join predicates.
const Q6C: JobQuery = JobQuery {
    name: "6c",
    relations: &[("ci", "cast_info", false), ("k", "keyword", true), ("mk", "movie_keyword", false), ("n", "name", true), ("t", "title", true)],
    joins: &[("k", "id", "mk", "keyword_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "ci", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("n", "id", "ci", "person_id")],
};
/// JOB 6d: 5 relations, 5 join predicates.
const Q6D: JobQuery = JobQuery {
    name: "6d",
    relations: &[("ci", "cast_info", false), ("k", "keyword", true), ("mk", "movie_keyword", false), ("n", "name", true), ("t", "title", true)],
    joins: &[("k", "id", "mk", "keyword_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "ci", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("n", "id", "ci", "person_id")],
};
/// JOB 6e: 5 relations, 5 join predicates.
const Q6E: JobQuery = JobQuery {
    name: "6e",
    relations: &[("ci", "cast_info", false), ("k", "keyword", true), ("mk", "movie_keyword", false), ("n", "name", true), ("t", "title", true)],
    joins: &[("k", "id", "mk", "keyword_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "ci", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("n", "id", "ci", "person_id")],
};
/// JOB 6f: 5 relations, 5 join predicates.
const Q6F: JobQuery = JobQuery {
    name: "6f",
    relations: &[("ci", "cast_info", false), ("k", "keyword", true), ("mk", "movie_keyword", false), ("n", "name", false), ("t", "title", true)],
    joins: &[("k", "id", "mk", "keyword_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "ci", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("n", "id", "ci", "person_id")],
};
/// JOB 7a: 8 relations, 11 join predicates.
const Q7A: JobQuery = JobQuery {
    name: "7a",
    relations: &[("an", "aka_name", true), ("ci", "cast_info", false), ("it", "info_type", true), ("lt", "link_type", true), ("ml", "movie_link", false), ("n", "name", true), ("pi", "person_info", true), ("t", "title", true)],
    joins: &[("n", "id", "an", "person_id"), ("n", "id", "pi", "person_id"), ("ci", "person_id", "n", "id"), ("t", "id", "ci", "movie_id"), ("ml", "linked_movie_id", "t", "id"), ("lt", "id", "ml", "link_type_id"), ("it", "id", "pi", "info_type_id"), ("pi", "person_id", "an", "person_id"), ("pi", "person_id", "ci", "person_id"), ("an", "person_id", "ci", "person_id"), ("ci", "movie_id", "ml", "linked_movie_id")],
};
/// JOB 7b: 8 relations, 11 join predicates.
const Q7B: JobQuery = JobQuery {
    name: "7b",
    relations: &[("an", "aka_name", true), ("ci", "cast_info", false), ("it", "info_type", true), ("lt", "link_type", true), ("ml", "movie_link", false), ("n", "name", true), ("pi", "person_info", true), ("t", "title", true)],
    joins: &[("n", "id", "an", "person_id"), ("n", "id", "pi", "person_id"), ("ci", "person_id", "n", "id"), ("t", "id", "ci", "movie_id"), ("ml", "linked_movie_id", "t", "id"), ("lt", "id", "ml", "link_type_id"), ("it", "id", "pi", "info_type_id"), ("pi", "person_id", "an", "person_id"), ("pi", "person_id", "ci", "person_id"), ("an", "person_id", "ci", "person_id"), ("ci", "movie_id", "ml", "linked_movie_id")],
};
/// JOB 7c: 8 relations, 11 join predicates.
const Q7C: JobQuery = JobQuery {
    name: "7c",
    relations: &[("an", "aka_name", true), ("ci", "cast_info", false), ("it", "info_type", true), ("lt", "link_type", true), ("ml", "movie_link", false), ("n", "name", true), ("pi", "person_info", true), ("t", "title", true)],
    joins: &[("n", "id", "an", "person_id"), ("n", "id", "pi", "person_id"), ("ci", "person_id", "n", "id"), ("t", "id", "ci", "movie_id"), ("ml", "linked_movie_id", "t", "id"), ("lt", "id", "ml", "link_type_id"), ("it", "id", "pi", "info_type_id"), ("pi", "person_id", "an", "person_id"), ("pi", "person_id", "ci", "person_id"), ("an", "person_id", "ci", "person_id"), ("ci", "movie_id", "ml", "linked_movie_id")],
};
/// JOB 8a: 7 relations, 8 join predicates.
const Q8A: JobQuery = JobQuery {
    name: "8a",
    relations: &[("an1", "aka_name", false), ("ci", "cast_info", true), ("cn", "company_name", true), ("mc", "movie_companies", true), ("n1", "name", true), ("rt", "role_type", true), ("t", "title", false)],
    joins: &[("an1", "person_id", "n1", "id"), ("n1", "id", "ci", "person_id"), ("ci", "movie_id", "t", "id"), ("t", "id", "mc", "movie_id"), ("mc", "company_id", "cn", "id"), ("ci", "role_id", "rt", "id"), ("an1", "person_id", "ci", "person_id"), ("ci", "movie_id", "mc", "movie_id")],
};
/// JOB 8b: 7 relations, 8 join predicates.
const Q8B: JobQuery = JobQuery {
    name: "8b",
    relations: &[("an", "aka_name", false), ("ci", "cast_info", true), ("cn", "company_name", true), ("mc", "movie_companies", true), ("n", "name", true), ("rt", "role_type", true), ("t", "title", true)],
    joins: &[("an", "person_id", "n", "id"), ("n", "id", "ci", "person_id"), ("ci", "movie_id", "t", "id"), ("t", "id", "mc", "movie_id"), ("mc", "company_id", "cn", "id"), ("ci", "role_id", "rt", "id"), ("an", "person_id", "ci", "person_id"), ("ci", "movie_id", "mc", "movie_id")],
};
/// JOB 8c: 7 relations, 8 join predicates.
const Q8C: JobQuery = JobQuery {
    name: "8c",
    relations: &[("a1", "aka_name", false), ("ci", "cast_info", false), ("cn", "company_name", true), ("mc", "movie_companies", false), ("n1", "name", false), ("rt", "role_type", true), ("t", "title", false)],
    joins: &[("a1", "person_id", "n1", "id"), ("n1", "id", "ci", "person_id"), ("ci", "movie_id", "t", "id"), ("t", "id", "mc", "movie_id"), ("mc", "company_id", "cn", "id"), ("ci", "role_id", "rt", "id"), ("a1", "person_id", "ci", "person_id"), ("ci", "movie_id", "mc", "movie_id")],
};
/// JOB 8d: 7 relations, 8 join predicates.
const Q8D: JobQuery = JobQuery {
    name: "8d",
    relations: &[("an1", "aka_name", false), ("ci", "cast_info", false), ("cn", "company_name", true), ("mc", "movie_companies", false), ("n1", "name", false), ("rt", "role_type", true), ("t", "title", false)],
    joins: &[("an1", "person_id", "n1", "id"), ("n1", "id", "ci", "person_id"), ("ci", "movie_id", "t", "id"), ("t", "id", "mc", "movie_id"), ("mc", "company_id", "cn", "id"), ("ci", "role_id", "rt", "id"), ("an1", "person_id", "ci", "person_id"), ("ci", "movie_id", "mc", "movie_id")],
};
/// JOB 9a: 8 relations, 9 join predicates.
const Q9A: JobQuery = JobQuery {
    name: "9a",
    relations: &[("an", "aka_name", false), ("chn", "char_name", false), ("ci", "cast_info", true), ("cn", "company_name", true), ("mc", "movie_companies", true), ("n", "name", true), ("rt", "role_type", true), ("t", "title", true)],
    joins: &[("ci", "movie_id", "t", "id"), ("t", "id", "mc", "movie_id"), ("ci", "movie_id", "mc", "movie_id"), ("mc", "company_id", "cn", "id"), ("ci", "role_id", "rt", "id"), ("n", "id", "ci", "person_id"), ("chn", "id", "ci", "person_role_id"), ("an", "person_id", "n", "id"), ("an", "person_id", "ci", "person_id")],
};
/// JOB 9b: 8 relations, 9 join predicates.
const Q9B: JobQuery = JobQuery {
    name: "9b",
    relations: &[("an", "aka_name", false), ("chn", "char_name", false), ("ci", "cast_info", true), ("cn", "company_name", true), ("mc", "movie_companies", true), ("n", "name", true), ("rt", "role_type", true), ("t", "title", true)],
    joins: &[("ci", "movie_id", "t", "id"), ("t", "id", "mc", "movie_id"), ("ci", "movie_id", "mc", "movie_id"), ("mc", "company_id", "cn", "id"), ("ci", "role_id", "rt", "id"), ("n", "id", "ci", "person_id"), ("chn", "id", "ci", "person_role_id"), ("an", "person_id", "n", "id"), ("an", "person_id", "ci", "person_id")],
};
/// JOB 9c: 8 relations, 9 join predicates.
const Q9C: JobQuery = JobQuery {
    name: "9c",
    relations: &[("an", "aka_name", false), ("chn", "char_name", false), ("ci", "cast_info", true), ("cn", "company_name", true), ("mc", "movie_companies", false), ("n", "name", true), ("rt", "role_type", true), ("t", "title", false)],
    joins: &[("ci", "movie_id", "t", "id"), ("t", "id", "mc", "movie_id"), ("ci", "movie_id", "mc", "movie_id"), ("mc", "company_id", "cn", "id"), ("ci", "role_id", "rt", "id"), ("n", "id", "ci", "person_id"), ("chn", "id", "ci", "person_role_id"), ("an", "person_id", "n", "id"), ("an", "person_id", "ci", "person_id")],
};
/// JOB 9d: 8 relations, 9 join predicates.
const Q9D: JobQuery = JobQuery {
    name: "9d",
    relations: &[("an", "aka_name", false), ("chn", "char_name", false), ("ci", "cast_info", true), ("cn", "company_name", true), ("mc", "movie_companies", false), ("n", "name", true), ("rt", "role_type", true), ("t", "title", false)],
    joins: &[("ci", "movie_id", "t", "id"), ("t", "id", "mc", "movie_id"), ("ci", "movie_id", "mc", "movie_id"), ("mc", "company_id", "cn", "id"), ("ci", "role_id", "rt", "id"), ("n", "id", "ci", "person_id"), ("chn", "id", "ci", "person_role_id"), ("an", "person_id", "n", "id"), ("an", "person_id", "ci", "person_id")],
};
/// JOB 10a: 7 relations, 7 join predicates.
const Q10A: JobQuery = JobQuery {
    name: "10a",
    relations: &[("chn", "char_name", false), ("ci", "cast_info", true), ("cn", "company_name", true), ("ct", "company_type", false), ("mc", "movie_companies", false), ("rt", "role_type", true), ("t", "title", true)],
    joins: &[("t", "id", "mc", "movie_id"), ("t", "id", "ci", "movie_id"), ("ci", "movie_id", "mc", "movie_id"), ("chn", "id", "ci", "person_role_id"), ("rt", "id", "ci", "role_id"), ("cn", "id", "mc", "company_id"), ("ct", "id", "mc", "company_type_id")],
};
/// JOB 10b: 7 relations, 7 join predicates.
const Q10B: JobQuery = JobQuery {
    name: "10b",
    relations: &[("chn", "char_name", false), ("ci", "cast_info", true), ("cn", "company_name", true), ("ct", "company_type", false), ("mc", "movie_companies", false), ("rt", "role_type", true), ("t", "title", true)],
    joins: &[("t", "id", "mc", "movie_id"), ("t", "id", "ci", "movie_id"), ("ci", "movie_id", "mc", "movie_id"), ("chn", "id", "ci", "person_role_id"), ("rt", "id", "ci", "role_id"), ("cn", "id", "mc", "company_id"), ("ct", "id", "mc", "company_type_id")],
};
/// JOB 10c: 7 relations, 7 join predicates.
const Q10C: JobQuery = JobQuery {
    name: "10c",
    relations: &[("chn", "char_name", false), ("ci", "cast_info", true), ("cn", "company_name", true), ("ct", "company_type", false), ("mc", "movie_companies", false), ("rt", "role_type", false), ("t", "title", true)],
    joins: &[("t", "id", "mc", "movie_id"), ("t", "id", "ci", "movie_id"), ("ci", "movie_id", "mc", "movie_id"), ("chn", "id", "ci", "person_role_id"), ("rt", "id", "ci", "role_id"), ("cn", "id", "mc", "company_id"), ("ct", "id", "mc", "company_type_id")],
};
/// JOB 11a: 8 relations, 10 join predicates.
const Q11A: JobQuery = JobQuery {
    name: "11a",
    relations: &[("cn", "company_name", true), ("ct", "company_type", true), ("k", "keyword", true), ("lt", "link_type", true), ("mc", "movie_companies", true), ("mk", "movie_keyword", false), ("ml", "movie_link", false), ("t", "title", true)],
    joins: &[("lt", "id", "ml", "link_type_id"), ("ml", "movie_id", "t", "id"), ("t", "id", "mk", "movie_id"), ("mk", "keyword_id", "k", "id"), ("t", "id", "mc", "movie_id"), ("mc", "company_type_id", "ct", "id"), ("mc", "company_id", "cn", "id"), ("ml", "movie_id", "mk", "movie_id"), ("ml", "movie_id", "mc", "movie_id"), ("mk", "movie_id", "mc", "movie_id")],
};
/// JOB 11b: 8 relations, 10 join predicates.
const Q11B: JobQuery = JobQuery {
    name: "11b",
    relations: &[("cn", "company_name", true), ("ct", "company_type", true), ("k", "keyword", true), ("lt", "link_type", true), ("mc", "movie_companies", true), ("mk", "movie_keyword", false), ("ml", "movie_link", false), ("t", "title", true)],
    joins: &[("lt", "id", "ml", "link_type_id"), ("ml", "movie_id", "t", "id"), ("t", "id", "mk", "movie_id"), ("mk", "keyword_id", "k", "id"), ("t", "id", "mc", "movie_id"), ("mc", "company_type_id", "ct", "id"), ("mc", "company_id", "cn", "id"), ("ml", "movie_id", "mk", "movie_id"), ("ml", "movie_id", "mc", "movie_id"), ("mk", "movie_id", "mc", "movie_id")],
};
/// JOB 11c: 8 relations, 10 join predicates.
const Q11C: JobQuery = JobQuery {
    name: "11c",
    relations: &[("cn", "company_name", true), ("ct", "company_type", true), ("k", "keyword", true), ("lt", "link_type", false), ("mc", "movie_companies", true), ("mk", "movie_keyword", false), ("ml", "movie_link", false), ("t", "title", true)],
    joins: &[("lt", "id", "ml", "link_type_id"), ("ml", "movie_id", "t", "id"), ("t", "id", "mk", "movie_id"), ("mk", "keyword_id", "k", "id"), ("t", "id", "mc", "movie_id"), ("mc", "company_type_id", "ct", "id"), ("mc", "company_id", "cn", "id"), ("ml", "movie_id", "mk", "movie_id"), ("ml", "movie_id", "mc", "movie_id"), ("mk", "movie_id", "mc", "movie_id")],
};
/// JOB 11d: 8 relations, 10 join predicates.
const Q11D: JobQuery = JobQuery {
    name: "11d",
    relations: &[("cn", "company_name", true), ("ct", "company_type", true), ("k", "keyword", true), ("lt", "link_type", false), ("mc", "movie_companies", true), ("mk", "movie_keyword", false), ("ml", "movie_link", false), ("t", "title", true)],
    joins: &[("lt", "id", "ml", "link_type_id"), ("ml", "movie_id", "t", "id"), ("t", "id", "mk", "movie_id"), ("mk", "keyword_id", "k", "id"), ("t", "id", "mc", "movie_id"), ("mc", "company_type_id", "ct", "id"), ("mc", "company_id", "cn", "id"), ("ml", "movie_id", "mk", "movie_id"), ("ml", "movie_id", "mc", "movie_id"), ("mk", "movie_id", "mc", "movie_id")],
};
/// JOB 12a: 8 relations, 10 join predicates.
const Q12A: JobQuery = JobQuery {
    name: "12a",
    relations: &[("cn", "company_name", true), ("ct", "company_type", true), ("it1", "info_type", true), ("it2", "info_type", true), ("mc", "movie_companies", false), ("mi", "movie_info", true), ("mi_idx", "movie_info_idx", true), ("t", "title", true)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("mi", "info_type_id", "it1", "id"), ("mi_idx", "info_type_id", "it2", "id"), ("t", "id", "mc", "movie_id"), ("ct", "id", "mc", "company_type_id"), ("cn", "id", "mc", "company_id"), ("mc", "movie_id", "mi", "movie_id"), ("mc", "movie_id", "mi_idx", "movie_id"), ("mi", "movie_id", "mi_idx", "movie_id")],
};
/// JOB 12b: 8 relations, 10 join predicates.
const Q12B: JobQuery = JobQuery {
    name: "12b",
    relations: &[("cn", "company_name", true), ("ct", "company_type", true), ("it1", "info_type", true), ("it2", "info_type", true), ("mc", "movie_companies", false), ("mi", "movie_info", false), ("mi_idx", "movie_info_idx", false), ("t", "title", true)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("mi", "info_type_id", "it1", "id"), ("mi_idx", "info_type_id", "it2", "id"), ("t", "id", "mc", "movie_id"), ("ct", "id", "mc", "company_type_id"), ("cn", "id", "mc", "company_id"), ("mc", "movie_id", "mi", "movie_id"), ("mc", "movie_id", "mi_idx", "movie_id"), ("mi", "movie_id", "mi_idx", "movie_id")],
};
/// JOB 12c: 8 relations, 10 join predicates.
const Q12C: JobQuery = JobQuery {
    name: "12c",
    relations: &[("cn", "company_name", true), ("ct", "company_type", true), ("it1", "info_type", true), ("it2", "info_type", true), ("mc", "movie_companies", false), ("mi", "movie_info", true), ("mi_idx", "movie_info_idx", true), ("t", "title", true)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("mi", "info_type_id", "it1", "id"), ("mi_idx", "info_type_id", "it2", "id"), ("t", "id", "mc", "movie_id"), ("ct", "id", "mc", "company_type_id"), ("cn", "id", "mc", "company_id"), ("mc", "movie_id", "mi", "movie_id"), ("mc", "movie_id", "mi_idx", "movie_id"), ("mi", "movie_id", "mi_idx", "movie_id")],
};
/// JOB 13a: 9 relations, 11 join predicates.
const Q13A: JobQuery = JobQuery {
    name: "13a",
    relations: &[("cn", "company_name", true), ("ct", "company_type", true), ("it", "info_type", true), ("it2", "info_type", true), ("kt", "kind_type", true), ("mc", "movie_companies", false), ("mi", "movie_info", false), ("miidx", "movie_info_idx", false), ("t", "title", false)],
    joins: &[("mi", "movie_id", "t", "id"), ("it2", "id", "mi", "info_type_id"), ("kt", "id", "t", "kind_id"), ("mc", "movie_id", "t", "id"), ("cn", "id", "mc", "company_id"), ("ct", "id", "mc", "company_type_id"), ("miidx", "movie_id", "t", "id"), ("it", "id", "miidx", "info_type_id"), ("mi", "movie_id", "miidx", "movie_id"), ("mi", "movie_id", "mc", "movie_id"), ("miidx", "movie_id", "mc", "movie_id")],
};
/// JOB 13b: 9 relations, 11 join predicates.
const Q13B: JobQuery = JobQuery {
    name: "13b",
    relations: &[("cn", "company_name", true), ("ct", "company_type", true), ("it", "info_type", true), ("it2", "info_type", true), ("kt", "kind_type", true), ("mc", "movie_companies", false), ("mi", "movie_info", false), ("miidx", "movie_info_idx", false), ("t", "title", true)],
    joins: &[("mi", "movie_id", "t", "id"), ("it2", "id", "mi", "info_type_id"), ("kt", "id", "t", "kind_id"), ("mc", "movie_id", "t", "id"), ("cn", "id", "mc", "company_id"), ("ct", "id", "mc", "company_type_id"), ("miidx", "movie_id", "t", "id"), ("it", "id", "miidx", "info_type_id"), ("mi", "movie_id", "miidx", "movie_id"), ("mi", "movie_id", "mc", "movie_id"), ("miidx", "movie_id", "mc", "movie_id")],
};
/// JOB 13c: 9 relations, 11 join predicates.
const Q13C: JobQuery = JobQuery {
    name: "13c",
    relations: &[("cn", "company_name", true), ("ct", "company_type", true), ("it", "info_type", true), ("it2", "info_type", true), ("kt", "kind_type", true), ("mc", "movie_companies", false), ("mi", "movie_info", false), ("miidx", "movie_info_idx", false), ("t", "title", true)],
    joins: &[("mi", "movie_id", "t", "id"), ("it2", "id", "mi", "info_type_id"), ("kt", "id", "t", "kind_id"), ("mc", "movie_id", "t", "id"), ("cn", "id", "mc", "company_id"), ("ct", "id", "mc", "company_type_id"), ("miidx", "movie_id", "t", "id"), ("it", "id", "miidx", "info_type_id"), ("mi", "movie_id", "miidx", "movie_id"), ("mi", "movie_id", "mc", "movie_id"), ("miidx", "movie_id", "mc", "movie_id")],
};
/// JOB 13d: 9 relations, 11 join predicates.
const Q13D: JobQuery = JobQuery {
    name: "13d",
    relations: &[("cn", "company_name", true), ("ct", "company_type", true), ("it", "info_type", true), ("it2", "info_type", true), ("kt", "kind_type", true), ("mc", "movie_companies", false), ("mi", "movie_info", false), ("miidx", "movie_info_idx", false), ("t", "title", false)],
    joins: &[("mi", "movie_id", "t", "id"), ("it2", "id", "mi", "info_type_id"), ("kt", "id", "t", "kind_id"), ("mc", "movie_id", "t", "id"), ("cn", "id", "mc", "company_id"), ("ct", "id", "mc", "company_type_id"), ("miidx", "movie_id", "t", "id"), ("it", "id", "miidx", "info_type_id"), ("mi", "movie_id", "miidx", "movie_id"), ("mi", "movie_id", "mc", "movie_id"), ("miidx", "movie_id", "mc", "movie_id")],
};
/// JOB 14a: 8 relations, 10 join predicates.
const Q14A: JobQuery = JobQuery {
    name: "14a",
    relations: &[("it1", "info_type", true), ("it2", "info_type", true), ("k", "keyword", true), ("kt", "kind_type", true), ("mi", "movie_info", true), ("mi_idx", "movie_info_idx", true), ("mk", "movie_keyword", false), ("t", "title", true)],
    joins: &[("kt", "id", "t", "kind_id"), ("t", "id", "mi", "movie_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("mk", "movie_id", "mi", "movie_id"), ("mk", "movie_id", "mi_idx", "movie_id"), ("mi", "movie_id", "mi_idx", "movie_id"), ("k", "id", "mk", "keyword_id"), ("it1", "id", "mi", "info_type_id"), ("it2", "id", "mi_idx", "info_type_id")],
};
/// JOB 14b: 8 relations, 10 join predicates.
const Q14B: JobQuery = JobQuery {
    name: "14b",
    relations: &[("it1", "info_type", true), ("it2", "info_type", true), ("k", "keyword", true), ("kt", "kind_type", true), ("mi", "movie_info", true), ("mi_idx", "movie_info_idx", true), ("mk", "movie_keyword", false), ("t", "title", true)],
    joins: &[("kt", "id", "t", "kind_id"), ("t", "id", "mi", "movie_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("mk", "movie_id", "mi", "movie_id"), ("mk", "movie_id", "mi_idx", "movie_id"), ("mi", "movie_id", "mi_idx", "movie_id"), ("k", "id", "mk", "keyword_id"), ("it1", "id", "mi", "info_type_id"), ("it2", "id", "mi_idx", "info_type_id")],
};
/// JOB 14c: 8 relations, 10 join predicates.
const Q14C: JobQuery = JobQuery {
    name: "14c",
    relations: &[("it1", "info_type", true), ("it2", "info_type", true), ("k", "keyword", true), ("kt", "kind_type", true), ("mi", "movie_info", true), ("mi_idx", "movie_info_idx", true), ("mk", "movie_keyword", false), ("t", "title", true)],
    joins: &[("kt", "id", "t", "kind_id"), ("t", "id", "mi", "movie_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("mk", "movie_id", "mi", "movie_id"), ("mk", "movie_id", "mi_idx", "movie_id"), ("mi", "movie_id", "mi_idx", "movie_id"), ("k", "id", "mk", "keyword_id"), ("it1", "id", "mi", "info_type_id"), ("it2", "id", "mi_idx", "info_type_id")],
};
/// JOB 15a: 9 relations, 14 join predicates.
const Q15A: JobQuery = JobQuery {
    name: "15a",
    relations: &[("at", "aka_title", false), ("cn", "company_name", true), ("ct", "company_type", false), ("it1", "info_type", true), ("k", "keyword", false), ("mc", "movie_companies", true), ("mi", "movie_info", true), ("mk", "movie_keyword", false), ("t", "title", true)],
    joins: &[("t", "id", "at", "movie_id"), ("t", "id", "mi", "movie_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "mc", "movie_id"), ("mk", "movie_id", "mi", "movie_id"), ("mk", "movie_id", "mc", "movie_id"), ("mk", "movie_id", "at", "movie_id"), ("mi", "movie_id", "mc", "movie_id"), ("mi", "movie_id", "at", "movie_id"), ("mc", "movie_id", "at", "movie_id"), ("k", "id", "mk", "keyword_id"), ("it1", "id", "mi", "info_type_id"), ("cn", "id", "mc", "company_id"), ("ct", "id", "mc", "company_type_id")],
};
/// JOB 15b: 9 relations, 14 join predicates.
const Q15B: JobQuery = JobQuery {
    name: "15b",
    relations: &[("at", "aka_title", false), ("cn", "company_name", true), ("ct", "company_type", false), ("it1", "info_type", true), ("k", "keyword", false), ("mc", "movie_companies", true), ("mi", "movie_info", true), ("mk", "movie_keyword", false), ("t", "title", true)],
    joins: &[("t", "id", "at", "movie_id"), ("t", "id", "mi", "movie_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "mc", "movie_id"), ("mk", "movie_id", "mi", "movie_id"), ("mk", "movie_id", "mc", "movie_id"), ("mk", "movie_id", "at", "movie_id"), ("mi", "movie_id", "mc", "movie_id"), ("mi", "movie_id", "at", "movie_id"), ("mc", "movie_id", "at", "movie_id"), ("k", "id", "mk", "keyword_id"), ("it1", "id", "mi", "info_type_id"), ("cn", "id", "mc", "company_id"), ("ct", "id", "mc", "company_type_id")],
};
/// JOB 15c: 9 relations, 14 join predicates.
const Q15C: JobQuery = JobQuery {
    name: "15c",
    relations: &[("at", "aka_title", false), ("cn", "company_name", true), ("ct", "company_type", false), ("it1", "info_type", true), ("k", "keyword", false), ("mc", "movie_companies", false), ("mi", "movie_info", true), ("mk", "movie_keyword", false), ("t", "title", true)],
    joins: &[("t", "id", "at", "movie_id"), ("t", "id", "mi", "movie_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "mc", "movie_id"), ("mk", "movie_id", "mi", "movie_id"), ("mk", "movie_id", "mc", "movie_id"), ("mk", "movie_id", "at", "movie_id"), ("mi", "movie_id", "mc", "movie_id"), ("mi", "movie_id", "at", "movie_id"), ("mc", "movie_id", "at", "movie_id"), ("k", "id", "mk", "keyword_id"), ("it1", "id", "mi", "info_type_id"), ("cn", "id", "mc", "company_id"), ("ct", "id", "mc", "company_type_id")],
};
/// JOB 15d: 9 relations, 14 join predicates.
const Q15D: JobQuery = JobQuery {
    name: "15d",
    relations: &[("at", "aka_title", false), ("cn", "company_name", true), ("ct", "company_type", false), ("it1", "info_type", true), ("k", "keyword", false), ("mc", "movie_companies", false), ("mi", "movie_info", true), ("mk", "movie_keyword", false), ("t", "title", true)],
    joins: &[("t", "id", "at", "movie_id"), ("t", "id", "mi", "movie_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "mc", "movie_id"), ("mk", "movie_id", "mi", "movie_id"), ("mk", "movie_id", "mc", "movie_id"), ("mk", "movie_id", "at", "movie_id"), ("mi", "movie_id", "mc", "movie_id"), ("mi", "movie_id", "at", "movie_id"), ("mc", "movie_id", "at", "movie_id"), ("k", "id", "mk", "keyword_id"), ("it1", "id", "mi", "info_type_id"), ("cn", "id", "mc", "company_id"), ("ct", "id", "mc", "company_type_id")],
};
/// JOB 16a: 8 relations, 11 join predicates.
const Q16A: JobQuery = JobQuery {
    name: "16a",
    relations: &[("an", "aka_name", false), ("ci", "cast_info", false), ("cn", "company_name", true), ("k", "keyword", true), ("mc", "movie_companies", false), ("mk", "movie_keyword", false), ("n", "name", false), ("t", "title", true)],
    joins: &[("an", "person_id", "n", "id"), ("n", "id", "ci", "person_id"), ("ci", "movie_id", "t", "id"), ("t", "id", "mk", "movie_id"), ("mk", "keyword_id", "k", "id"), ("t", "id", "mc", "movie_id"), ("mc", "company_id", "cn", "id"), ("an", "person_id", "ci", "person_id"), ("ci", "movie_id", "mc", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("mc", "movie_id", "mk", "movie_id")],
};
/// JOB 16b: 8 relations, 11 join predicates.
const Q16B: JobQuery = JobQuery {
    name: "16b",
    relations: &[("an", "aka_name", false), ("ci", "cast_info", false), ("cn", "company_name", true), ("k", "keyword", true), ("mc", "movie_companies", false), ("mk", "movie_keyword", false), ("n", "name", false), ("t", "title", false)],
    joins: &[("an", "person_id", "n", "id"), ("n", "id", "ci", "person_id"), ("ci", "movie_id", "t", "id"), ("t", "id", "mk", "movie_id"), ("mk", "keyword_id", "k", "id"), ("t", "id", "mc", "movie_id"), ("mc", "company_id", "cn", "id"), ("an", "person_id", "ci", "person_id"), ("ci", "movie_id", "mc", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("mc", "movie_id", "mk", "movie_id")],
};
/// JOB 16c: 8 relations, 11 join predicates.
const Q16C: JobQuery = JobQuery {
    name: "16c",
    relations: &[("an", "aka_name", false), ("ci", "cast_info", false), ("cn", "company_name", true), ("k", "keyword", true), ("mc", "movie_companies", false), ("mk", "movie_keyword", false), ("n", "name", false), ("t", "title", true)],
    joins: &[("an", "person_id", "n", "id"), ("n", "id", "ci", "person_id"), ("ci", "movie_id", "t", "id"), ("t", "id", "mk", "movie_id"), ("mk", "keyword_id", "k", "id"), ("t", "id", "mc", "movie_id"), ("mc", "company_id", "cn", "id"), ("an", "person_id", "ci", "person_id"), ("ci", "movie_id", "mc", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("mc", "movie_id", "mk", "movie_id")],
};
/// JOB 16d: 8 relations, 11 join predicates.
const Q16D: JobQuery = JobQuery {
    name: "16d",
    relations: &[("an", "aka_name", false), ("ci", "cast_info", false), ("cn", "company_name", true), ("k", "keyword", true), ("mc", "movie_companies", false), ("mk", "movie_keyword", false), ("n", "name", false), ("t", "title", true)],
    joins: &[("an", "person_id", "n", "id"), ("n", "id", "ci", "person_id"), ("ci", "movie_id", "t", "id"), ("t", "id", "mk", "movie_id"), ("mk", "keyword_id", "k", "id"), ("t", "id", "mc", "movie_id"), ("mc", "company_id", "cn", "id"), ("an", "person_id", "ci", "person_id"), ("ci", "movie_id", "mc", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("mc", "movie_id", "mk", "movie_id")],
};
/// JOB 17a: 7 relations, 9 join predicates.
const Q17A: JobQuery = JobQuery {
    name: "17a",
    relations: &[("ci", "cast_info", false), ("cn", "company_name", true), ("k", "keyword", true), ("mc", "movie_companies", false), ("mk", "movie_keyword", false), ("n", "name", true), ("t", "title", false)],
    joins: &[("n", "id", "ci", "person_id"), ("ci", "movie_id", "t", "id"), ("t", "id", "mk", "movie_id"), ("mk", "keyword_id", "k", "id"), ("t", "id", "mc", "movie_id"), ("mc", "company_id", "cn", "id"), ("ci", "movie_id", "mc", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("mc", "movie_id", "mk", "movie_id")],
};
/// JOB 17b: 7 relations, 9 join predicates.
const Q17B: JobQuery = JobQuery {
    name: "17b",
    relations: &[("ci", "cast_info", false), ("cn", "company_name", false), ("k", "keyword", true), ("mc", "movie_companies", false), ("mk", "movie_keyword", false), ("n", "name", true), ("t", "title", false)],
    joins: &[("n", "id", "ci", "person_id"), ("ci", "movie_id", "t", "id"), ("t", "id", "mk", "movie_id"), ("mk", "keyword_id", "k", "id"), ("t", "id", "mc", "movie_id"), ("mc", "company_id", "cn", "id"), ("ci", "movie_id", "mc", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("mc", "movie_id", "mk", "movie_id")],
};
/// JOB 17c: 7 relations, 9 join predicates.
const Q17C: JobQuery = JobQuery {
    name: "17c",
    relations: &[("ci", "cast_info", false), ("cn", "company_name", false), ("k", "keyword", true), ("mc", "movie_companies", false), ("mk", "movie_keyword", false), ("n", "name", true), ("t", "title", false)],
    joins: &[("n", "id", "ci", "person_id"), ("ci", "movie_id", "t", "id"), ("t", "id", "mk", "movie_id"), ("mk", "keyword_id", "k", "id"), ("t", "id", "mc", "movie_id"), ("mc", "company_id", "cn", "id"), ("ci", "movie_id", "mc", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("mc", "movie_id", "mk", "movie_id")],
};
/// JOB 17d: 7 relations, 9 join predicates.
const Q17D: JobQuery = JobQuery {
    name: "17d",
    relations: &[("ci", "cast_info", false), ("cn", "company_name", false), ("k", "keyword", true), ("mc", "movie_companies", false), ("mk", "movie_keyword", false), ("n", "name", true), ("t", "title", false)],
    joins: &[("n", "id", "ci", "person_id"), ("ci", "movie_id", "t", "id"), ("t", "id", "mk", "movie_id"), ("mk", "keyword_id", "k", "id"), ("t", "id", "mc", "movie_id"), ("mc", "company_id", "cn", "id"), ("ci", "movie_id", "mc", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("mc", "movie_id", "mk", "movie_id")],
};
/// JOB 17e: 7 relations, 9 join predicates.
const Q17E: JobQuery = JobQuery {
    name: "17e",
    relations: &[("ci", "cast_info", false), ("cn", "company_name", true), ("k", "keyword", true), ("mc", "movie_companies", false), ("mk", "movie_keyword", false), ("n", "name", false), ("t", "title", false)],
    joins: &[("n", "id", "ci", "person_id"), ("ci", "movie_id", "t", "id"), ("t", "id", "mk", "movie_id"), ("mk", "keyword_id", "k", "id"), ("t", "id", "mc", "movie_id"), ("mc", "company_id", "cn", "id"), ("ci", "movie_id", "mc", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("mc", "movie_id", "mk", "movie_id")],
};
/// JOB 17f: 7 relations, 9 join predicates.
const Q17F: JobQuery = JobQuery {
    name: "17f",
    relations: &[("ci", "cast_info", false), ("cn", "company_name", false), ("k", "keyword", true), ("mc", "movie_companies", false), ("mk", "movie_keyword", false), ("n", "name", true), ("t", "title", false)],
    joins: &[("n", "id", "ci", "person_id"), ("ci", "movie_id", "t", "id"), ("t", "id", "mk", "movie_id"), ("mk", "keyword_id", "k", "id"), ("t", "id", "mc", "movie_id"), ("mc", "company_id", "cn", "id"), ("ci", "movie_id", "mc", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("mc", "movie_id", "mk", "movie_id")],
};
/// JOB 18a: 7 relations, 9 join predicates.
const Q18A: JobQuery = JobQuery {
    name: "18a",
    relations: &[("ci", "cast_info", true), ("it1", "info_type", true), ("it2", "info_type", true), ("mi", "movie_info", false), ("mi_idx", "movie_info_idx", false), ("n", "name", true), ("t", "title", false)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("t", "id", "ci", "movie_id"), ("ci", "movie_id", "mi", "movie_id"), ("ci", "movie_id", "mi_idx", "movie_id"), ("mi", "movie_id", "mi_idx", "movie_id"), ("n", "id", "ci", "person_id"), ("it1", "id", "mi", "info_type_id"), ("it2", "id", "mi_idx", "info_type_id")],
};
/// JOB 18b: 7 relations, 9 join predicates.
const Q18B: JobQuery = JobQuery {
    name: "18b",
    relations: &[("ci", "cast_info", true), ("it1", "info_type", true), ("it2", "info_type", true), ("mi", "movie_info", true), ("mi_idx", "movie_info_idx", true), ("n", "name", true), ("t", "title", true)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("t", "id", "ci", "movie_id"), ("ci", "movie_id", "mi", "movie_id"), ("ci", "movie_id", "mi_idx", "movie_id"), ("mi", "movie_id", "mi_idx", "movie_id"), ("n", "id", "ci", "person_id"), ("it1", "id", "mi", "info_type_id"), ("it2", "id", "mi_idx", "info_type_id")],
};
/// JOB 18c: 7 relations, 9 join predicates.
const Q18C: JobQuery = JobQuery {
    name: "18c",
    relations: &[("ci", "cast_info", true), ("it1", "info_type", true), ("it2", "info_type", true), ("mi", "movie_info", true), ("mi_idx", "movie_info_idx", false), ("n", "name", true), ("t", "title", false)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("t", "id", "ci", "movie_id"), ("ci", "movie_id", "mi", "movie_id"), ("ci", "movie_id", "mi_idx", "movie_id"), ("mi", "movie_id", "mi_idx", "movie_id"), ("n", "id", "ci", "person_id"), ("it1", "id", "mi", "info_type_id"), ("it2", "id", "mi_idx", "info_type_id")],
};
/// JOB 19a: 10 relations, 13 join predicates.
const Q19A: JobQuery = JobQuery {
    name: "19a",
    relations: &[("an", "aka_name", false), ("chn", "char_name", false), ("ci", "cast_info", true), ("cn", "company_name", true), ("it", "info_type", true), ("mc", "movie_companies", true), ("mi", "movie_info", true), ("n", "name", true), ("rt", "role_type", true), ("t", "title", true)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mc", "movie_id"), ("t", "id", "ci", "movie_id"), ("mc", "movie_id", "ci", "movie_id"), ("mc", "movie_id", "mi", "movie_id"), ("mi", "movie_id", "ci", "movie_id"), ("cn", "id", "mc", "company_id"), ("it", "id", "mi", "info_type_id"), ("n", "id", "ci", "person_id"), ("rt", "id", "ci", "role_id"), ("n", "id", "an", "person_id"), ("ci", "person_id", "an", "person_id"), ("chn", "id", "ci", "person_role_id")],
};
/// JOB 19b: 10 relations, 13 join predicates.
const Q19B: JobQuery = JobQuery {
    name: "19b",
    relations: &[("an", "aka_name", false), ("chn", "char_name", false), ("ci", "cast_info", true), ("cn", "company_name", true), ("it", "info_type", true), ("mc", "movie_companies", true), ("mi", "movie_info", true), ("n", "name", true), ("rt", "role_type", true), ("t", "title", true)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mc", "movie_id"), ("t", "id", "ci", "movie_id"), ("mc", "movie_id", "ci", "movie_id"), ("mc", "movie_id", "mi", "movie_id"), ("mi", "movie_id", "ci", "movie_id"), ("cn", "id", "mc", "company_id"), ("it", "id", "mi", "info_type_id"), ("n", "id", "ci", "person_id"), ("rt", "id", "ci", "role_id"), ("n", "id", "an", "person_id"), ("ci", "person_id", "an", "person_id"), ("chn", "id", "ci", "person_role_id")],
};
/// JOB 19c: 10 relations, 13 join predicates.
const Q19C: JobQuery = JobQuery {
    name: "19c",
    relations: &[("an", "aka_name", false), ("chn", "char_name", false), ("ci", "cast_info", true), ("cn", "company_name", true), ("it", "info_type", true), ("mc", "movie_companies", false), ("mi", "movie_info", true), ("n", "name", true), ("rt", "role_type", true), ("t", "title", true)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mc", "movie_id"), ("t", "id", "ci", "movie_id"), ("mc", "movie_id", "ci", "movie_id"), ("mc", "movie_id", "mi", "movie_id"), ("mi", "movie_id", "ci", "movie_id"), ("cn", "id", "mc", "company_id"), ("it", "id", "mi", "info_type_id"), ("n", "id", "ci", "person_id"), ("rt", "id", "ci", "role_id"), ("n", "id", "an", "person_id"), ("ci", "person_id", "an", "person_id"), ("chn", "id", "ci", "person_role_id")],
};
/// JOB 19d: 10 relations, 13 join predicates.
const Q19D: JobQuery = JobQuery {
    name: "19d",
    relations: &[("an", "aka_name", false), ("chn", "char_name", false), ("ci", "cast_info", true), ("cn", "company_name", true), ("it", "info_type", true), ("mc", "movie_companies", false), ("mi", "movie_info", false), ("n", "name", true), ("rt", "role_type", true), ("t", "title", true)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mc", "movie_id"), ("t", "id", "ci", "movie_id"), ("mc", "movie_id", "ci", "movie_id"), ("mc", "movie_id", "mi", "movie_id"), ("mi", "movie_id", "ci", "movie_id"), ("cn", "id", "mc", "company_id"), ("it", "id", "mi", "info_type_id"), ("n", "id", "ci", "person_id"), ("rt", "id", "ci", "role_id"), ("n", "id", "an", "person_id"), ("ci", "person_id", "an", "person_id"), ("chn", "id", "ci", "person_role_id")],
};
/// JOB 20a: 10 relations, 12 join predicates.
const Q20A: JobQuery = JobQuery {
    name: "20a",
    relations: &[("cc", "complete_cast", false), ("cct1", "comp_cast_type", true), ("cct2", "comp_cast_type", true), ("chn", "char_name", true), ("ci", "cast_info", false), ("k", "keyword", true), ("kt", "kind_type", true), ("mk", "movie_keyword", false), ("n", "name", false), ("t", "title", true)],
    joins: &[("kt", "id", "t", "kind_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "ci", "movie_id"), ("t", "id", "cc", "movie_id"), ("mk", "movie_id", "ci", "movie_id"), ("mk", "movie_id", "cc", "movie_id"), ("ci", "movie_id", "cc", "movie_id"), ("chn", "id", "ci", "person_role_id"), ("n", "id", "ci", "person_id"), ("k", "id", "mk", "keyword_id"), ("cct1", "id", "cc", "subject_id"), ("cct2", "id", "cc", "status_id")],
};
/// JOB 20b: 10 relations, 12 join predicates.
const Q20B: JobQuery = JobQuery {
    name: "20b",
    relations: &[("cc", "complete_cast", false), ("cct1", "comp_cast_type", true), ("cct2", "comp_cast_type", true), ("chn", "char_name", true), ("ci", "cast_info", false), ("k", "keyword", true), ("kt", "kind_type", true), ("mk", "movie_keyword", false), ("n", "name", true), ("t", "title", true)],
    joins: &[("kt", "id", "t", "kind_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "ci", "movie_id"), ("t", "id", "cc", "movie_id"), ("mk", "movie_id", "ci", "movie_id"), ("mk", "movie_id", "cc", "movie_id"), ("ci", "movie_id", "cc", "movie_id"), ("chn", "id", "ci", "person_role_id"), ("n", "id", "ci", "person_id"), ("k", "id", "mk", "keyword_id"), ("cct1", "id", "cc", "subject_id"), ("cct2", "id", "cc", "status_id")],
};
/// JOB 20c: 10 relations, 12 join predicates.
const Q20C: JobQuery = JobQuery {
    name: "20c",
    relations: &[("cc", "complete_cast", false), ("cct1", "comp_cast_type", true), ("cct2", "comp_cast_type", true), ("chn", "char_name", true), ("ci", "cast_info", false), ("k", "keyword", true), ("kt", "kind_type", true), ("mk", "movie_keyword", false), ("n", "name", false), ("t", "title", true)],
    joins: &[("kt", "id", "t", "kind_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "ci", "movie_id"), ("t", "id", "cc", "movie_id"), ("mk", "movie_id", "ci", "movie_id"), ("mk", "movie_id", "cc", "movie_id"), ("ci", "movie_id", "cc", "movie_id"), ("chn", "id", "ci", "person_role_id"), ("n", "id", "ci", "person_id"), ("k", "id", "mk", "keyword_id"), ("cct1", "id", "cc", "subject_id"), ("cct2", "id", "cc", "status_id")],
};
/// JOB 21a: 9 relations, 14 join predicates.
const Q21A: JobQuery = JobQuery {
    name: "21a",
    relations: &[("cn", "company_name", true), ("ct", "company_type", true), ("k", "keyword", true), ("lt", "link_type", true), ("mc", "movie_companies", true), ("mi", "movie_info", true), ("mk", "movie_keyword", false), ("ml", "movie_link", false), ("t", "title", true)],
    joins: &[("lt", "id", "ml", "link_type_id"), ("ml", "movie_id", "t", "id"), ("t", "id", "mk", "movie_id"), ("mk", "keyword_id", "k", "id"), ("t", "id", "mc", "movie_id"), ("mc", "company_type_id", "ct", "id"), ("mc", "company_id", "cn", "id"), ("mi", "movie_id", "t", "id"), ("ml", "movie_id", "mk", "movie_id"), ("ml", "movie_id", "mc", "movie_id"), ("mk", "movie_id", "mc", "movie_id"), ("ml", "movie_id", "mi", "movie_id"), ("mk", "movie_id", "mi", "movie_id"), ("mc", "movie_id", "mi", "movie_id")],
};
/// JOB 21b: 9 relations, 14 join predicates.
const Q21B: JobQuery = JobQuery {
    name: "21b",
    relations: &[("cn", "company_name", true), ("ct", "company_type", true), ("k", "keyword", true), ("lt", "link_type", true), ("mc", "movie_companies", true), ("mi", "movie_info", true), ("mk", "movie_keyword", false), ("ml", "movie_link", false), ("t", "title", true)],
    joins: &[("lt", "id", "ml", "link_type_id"), ("ml", "movie_id", "t", "id"), ("t", "id", "mk", "movie_id"), ("mk", "keyword_id", "k", "id"), ("t", "id", "mc", "movie_id"), ("mc", "company_type_id", "ct", "id"), ("mc", "company_id", "cn", "id"), ("mi", "movie_id", "t", "id"), ("ml", "movie_id", "mk", "movie_id"), ("ml", "movie_id", "mc", "movie_id"), ("mk", "movie_id", "mc", "movie_id"), ("ml", "movie_id", "mi", "movie_id"), ("mk", "movie_id", "mi", "movie_id"), ("mc", "movie_id", "mi", "movie_id")],
};
/// JOB 21c: 9 relations, 14 join predicates.
const Q21C: JobQuery = JobQuery {
    name: "21c",
    relations: &[("cn", "company_name", true), ("ct", "company_type", true), ("k", "keyword", true), ("lt", "link_type", true), ("mc", "movie_companies", true), ("mi", "movie_info", true), ("mk", "movie_keyword", false), ("ml", "movie_link", false), ("t", "title", true)],
    joins: &[("lt", "id", "ml", "link_type_id"), ("ml", "movie_id", "t", "id"), ("t", "id", "mk", "movie_id"), ("mk", "keyword_id", "k", "id"), ("t", "id", "mc", "movie_id"), ("mc", "company_type_id", "ct", "id"), ("mc", "company_id", "cn", "id"), ("mi", "movie_id", "t", "id"), ("ml", "movie_id", "mk", "movie_id"), ("ml", "movie_id", "mc", "movie_id"), ("mk", "movie_id", "mc", "movie_id"), ("ml", "movie_id", "mi", "movie_id"), ("mk", "movie_id", "mi", "movie_id"), ("mc", "movie_id", "mi", "movie_id")],
};
/// JOB 22a: 11 relations, 16 join predicates.
const Q22A: JobQuery = JobQuery {
    name: "22a",
    relations: &[("cn", "company_name", true), ("ct", "company_type", false), ("it1", "info_type", true), ("it2", "info_type", true), ("k", "keyword", true), ("kt", "kind_type", true), ("mc", "movie_companies", true), ("mi", "movie_info", true), ("mi_idx", "movie_info_idx", true), ("mk", "movie_keyword", false), ("t", "title", true)],
    joins: &[("kt", "id", "t", "kind_id"), ("t", "id", "mi", "movie_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("t", "id", "mc", "movie_id"), ("mk", "movie_id", "mi", "movie_id"), ("mk", "movie_id", "mi_idx", "movie_id"), ("mk", "movie_id", "mc", "movie_id"), ("mi", "movie_id", "mi_idx", "movie_id"), ("mi", "movie_id", "mc", "movie_id"), ("mc", "movie_id", "mi_idx", "movie_id"), ("k", "id", "mk", "keyword_id"), ("it1", "id", "mi", "info_type_id"), ("it2", "id", "mi_idx", "info_type_id"), ("ct", "id", "mc", "company_type_id"), ("cn", "id", "mc", "company_id")],
};
/// JOB 22b: 11 relations, 16 join predicates.
const Q22B: JobQuery = JobQuery {
    name: "22b",
    relations: &[("cn", "company_name", true), ("ct", "company_type", false), ("it1", "info_type", true), ("it2", "info_type", true), ("k", "keyword", true), ("kt", "kind_type", true), ("mc", "movie_companies", true), ("mi", "movie_info", true), ("mi_idx", "movie_info_idx", true), ("mk", "movie_keyword", false), ("t", "title", true)],
    joins: &[("kt", "id", "t", "kind_id"), ("t", "id", "mi", "movie_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("t", "id", "mc", "movie_id"), ("mk", "movie_id", "mi", "movie_id"), ("mk", "movie_id", "mi_idx", "movie_id"), ("mk", "movie_id", "mc", "movie_id"), ("mi", "movie_id", "mi_idx", "movie_id"), ("mi", "movie_id", "mc", "movie_id"), ("mc", "movie_id", "mi_idx", "movie_id"), ("k", "id", "mk", "keyword_id"), ("it1", "id", "mi", "info_type_id"), ("it2", "id", "mi_idx", "info_type_id"), ("ct", "id", "mc", "company_type_id"), ("cn", "id", "mc", "company_id")],
};
/// JOB 22c: 11 relations, 16 join predicates.
const Q22C: JobQuery = JobQuery {
    name: "22c",
    relations: &[("cn", "company_name", true), ("ct", "company_type", false), ("it1", "info_type", true), ("it2", "info_type", true), ("k", "keyword", true), ("kt", "kind_type", true), ("mc", "movie_companies", true), ("mi", "movie_info", true), ("mi_idx", "movie_info_idx", true), ("mk", "movie_keyword", false), ("t", "title", true)],
    joins: &[("kt", "id", "t", "kind_id"), ("t", "id", "mi", "movie_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("t", "id", "mc", "movie_id"), ("mk", "movie_id", "mi", "movie_id"), ("mk", "movie_id", "mi_idx", "movie_id"), ("mk", "movie_id", "mc", "movie_id"), ("mi", "movie_id", "mi_idx", "movie_id"), ("mi", "movie_id", "mc", "movie_id"), ("mc", "movie_id", "mi_idx", "movie_id"), ("k", "id", "mk", "keyword_id"), ("it1", "id", "mi", "info_type_id"), ("it2", "id", "mi_idx", "info_type_id"), ("ct", "id", "mc", "company_type_id"), ("cn", "id", "mc", "company_id")],
};
/// JOB 22d: 11 relations, 16 join predicates.
const Q22D: JobQuery = JobQuery {
    name: "22d",
    relations: &[("cn", "company_name", true), ("ct", "company_type", false), ("it1", "info_type", true), ("it2", "info_type", true), ("k", "keyword", true), ("kt", "kind_type", true), ("mc", "movie_companies", false), ("mi", "movie_info", true), ("mi_idx", "movie_info_idx", true), ("mk", "movie_keyword", false), ("t", "title", true)],
    joins: &[("kt", "id", "t", "kind_id"), ("t", "id", "mi", "movie_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("t", "id", "mc", "movie_id"), ("mk", "movie_id", "mi", "movie_id"), ("mk", "movie_id", "mi_idx", "movie_id"), ("mk", "movie_id", "mc", "movie_id"), ("mi", "movie_id", "mi_idx", "movie_id"), ("mi", "movie_id", "mc", "movie_id"), ("mc", "movie_id", "mi_idx", "movie_id"), ("k", "id", "mk", "keyword_id"), ("it1", "id", "mi", "info_type_id"), ("it2", "id", "mi_idx", "info_type_id"), ("ct", "id", "mc", "company_type_id"), ("cn", "id", "mc", "company_id")],
};
/// JOB 23a: 11 relations, 16 join predicates.
const Q23A: JobQuery = JobQuery {
    name: "23a",
    relations: &[("cc", "complete_cast", false), ("cct1", "comp_cast_type", true), ("cn", "company_name", true), ("ct", "company_type", false), ("it1", "info_type", true), ("k", "keyword", false), ("kt", "kind_type", true), ("mc", "movie_companies", false), ("mi", "movie_info", true), ("mk", "movie_keyword", false), ("t", "title", true)],
    joins: &[("kt", "id", "t", "kind_id"), ("t", "id", "mi", "movie_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "mc", "movie_id"), ("t", "id", "cc", "movie_id"), ("mk", "movie_id", "mi", "movie_id"), ("mk", "movie_id", "mc", "movie_id"), ("mk", "movie_id", "cc", "movie_id"), ("mi", "movie_id", "mc", "movie_id"), ("mi", "movie_id", "cc", "movie_id"), ("mc", "movie_id", "cc", "movie_id"), ("k", "id", "mk", "keyword_id"), ("it1", "id", "mi", "info_type_id"), ("cn", "id", "mc", "company_id"), ("ct", "id", "mc", "company_type_id"), ("cct1", "id", "cc", "status_id")],
};
/// JOB 23b: 11 relations, 16 join predicates.
const Q23B: JobQuery = JobQuery {
    name: "23b",
    relations: &[("cc", "complete_cast", false), ("cct1", "comp_cast_type", true), ("cn", "company_name", true), ("ct", "company_type", false), ("it1", "info_type", true), ("k", "keyword", true), ("kt", "kind_type", true), ("mc", "movie_companies", false), ("mi", "movie_info", true), ("mk", "movie_keyword", false), ("t", "title", true)],
    joins: &[("kt", "id", "t", "kind_id"), ("t", "id", "mi", "movie_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "mc", "movie_id"), ("t", "id", "cc", "movie_id"), ("mk", "movie_id", "mi", "movie_id"), ("mk", "movie_id", "mc", "movie_id"), ("mk", "movie_id", "cc", "movie_id"), ("mi", "movie_id", "mc", "movie_id"), ("mi", "movie_id", "cc", "movie_id"), ("mc", "movie_id", "cc", "movie_id"), ("k", "id", "mk", "keyword_id"), ("it1", "id", "mi", "info_type_id"), ("cn", "id", "mc", "company_id"), ("ct", "id", "mc", "company_type_id"), ("cct1", "id", "cc", "status_id")],
};
/// JOB 23c: 11 relations, 16 join predicates.
const Q23C: JobQuery = JobQuery {
    name: "23c",
    relations: &[("cc", "complete_cast", false), ("cct1", "comp_cast_type", true), ("cn", "company_name", true), ("ct", "company_type", false), ("it1", "info_type", true), ("k", "keyword", false), ("kt", "kind_type", true), ("mc", "movie_companies", false), ("mi", "movie_info", true), ("mk", "movie_keyword", false), ("t", "title", true)],
    joins: &[("kt", "id", "t", "kind_id"), ("t", "id", "mi", "movie_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "mc", "movie_id"), ("t", "id", "cc", "movie_id"), ("mk", "movie_id", "mi", "movie_id"), ("mk", "movie_id", "mc", "movie_id"), ("mk", "movie_id", "cc", "movie_id"), ("mi", "movie_id", "mc", "movie_id"), ("mi", "movie_id", "cc", "movie_id"), ("mc", "movie_id", "cc", "movie_id"), ("k", "id", "mk", "keyword_id"), ("it1", "id", "mi", "info_type_id"), ("cn", "id", "mc", "company_id"), ("ct", "id", "mc", "company_type_id"), ("cct1", "id", "cc", "status_id")],
};
/// JOB 24a: 12 relations, 18 join predicates.
const Q24A: JobQuery = JobQuery {
    name: "24a",
    relations: &[("an", "aka_name", false), ("chn", "char_name", false), ("ci", "cast_info", true), ("cn", "company_name", true), ("it", "info_type", true), ("k", "keyword", true), ("mc", "movie_companies", false), ("mi", "movie_info", true), ("mk", "movie_keyword", false), ("n", "name", true), ("rt", "role_type", true), ("t", "title", true)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mc", "movie_id"), ("t", "id", "ci", "movie_id"), ("t", "id", "mk", "movie_id"), ("mc", "movie_id", "ci", "movie_id"), ("mc", "movie_id", "mi", "movie_id"), ("mc", "movie_id", "mk", "movie_id"), ("mi", "movie_id", "ci", "movie_id"), ("mi", "movie_id", "mk", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("cn", "id", "mc", "company_id"), ("it", "id", "mi", "info_type_id"), ("n", "id", "ci", "person_id"), ("rt", "id", "ci", "role_id"), ("n", "id", "an", "person_id"), ("ci", "person_id", "an", "person_id"), ("chn", "id", "ci", "person_role_id"), ("k", "id", "mk", "keyword_id")],
};
/// JOB 24b: 12 relations, 18 join predicates.
const Q24B: JobQuery = JobQuery {
    name: "24b",
    relations: &[("an", "aka_name", false), ("chn", "char_name", false), ("ci", "cast_info", true), ("cn", "company_name", true), ("it", "info_type", true), ("k", "keyword", true), ("mc", "movie_companies", false), ("mi", "movie_info", true), ("mk", "movie_keyword", false), ("n", "name", true), ("rt", "role_type", true), ("t", "title", true)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mc", "movie_id"), ("t", "id", "ci", "movie_id"), ("t", "id", "mk", "movie_id"), ("mc", "movie_id", "ci", "movie_id"), ("mc", "movie_id", "mi", "movie_id"), ("mc", "movie_id", "mk", "movie_id"), ("mi", "movie_id", "ci", "movie_id"), ("mi", "movie_id", "mk", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("cn", "id", "mc", "company_id"), ("it", "id", "mi", "info_type_id"), ("n", "id", "ci", "person_id"), ("rt", "id", "ci", "role_id"), ("n", "id", "an", "person_id"), ("ci", "person_id", "an", "person_id"), ("chn", "id", "ci", "person_role_id"), ("k", "id", "mk", "keyword_id")],
};
/// JOB 25a: 9 relations, 14 join predicates.
const Q25A: JobQuery = JobQuery {
    name: "25a",
    relations: &[("ci", "cast_info", true), ("it1", "info_type", true), ("it2", "info_type", true), ("k", "keyword", true), ("mi", "movie_info", true), ("mi_idx", "movie_info_idx", false), ("mk", "movie_keyword", false), ("n", "name", true), ("t", "title", false)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("t", "id", "ci", "movie_id"), ("t", "id", "mk", "movie_id"), ("ci", "movie_id", "mi", "movie_id"), ("ci", "movie_id", "mi_idx", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("mi", "movie_id", "mi_idx", "movie_id"), ("mi", "movie_id", "mk", "movie_id"), ("mi_idx", "movie_id", "mk", "movie_id"), ("n", "id", "ci", "person_id"), ("it1", "id", "mi", "info_type_id"), ("it2", "id", "mi_idx", "info_type_id"), ("k", "id", "mk", "keyword_id")],
};
/// JOB 25b: 9 relations, 14 join predicates.
const Q25B: JobQuery = JobQuery {
    name: "25b",
    relations: &[("ci", "cast_info", true), ("it1", "info_type", true), ("it2", "info_type", true), ("k", "keyword", true), ("mi", "movie_info", true), ("mi_idx", "movie_info_idx", false), ("mk", "movie_keyword", false), ("n", "name", true), ("t", "title", true)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("t", "id", "ci", "movie_id"), ("t", "id", "mk", "movie_id"), ("ci", "movie_id", "mi", "movie_id"), ("ci", "movie_id", "mi_idx", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("mi", "movie_id", "mi_idx", "movie_id"), ("mi", "movie_id", "mk", "movie_id"), ("mi_idx", "movie_id", "mk", "movie_id"), ("n", "id", "ci", "person_id"), ("it1", "id", "mi", "info_type_id"), ("it2", "id", "mi_idx", "info_type_id"), ("k", "id", "mk", "keyword_id")],
};
/// JOB 25c: 9 relations, 14 join predicates.
const Q25C: JobQuery = JobQuery {
    name: "25c",
    relations: &[("ci", "cast_info", true), ("it1", "info_type", true), ("it2", "info_type", true), ("k", "keyword", true), ("mi", "movie_info", true), ("mi_idx", "movie_info_idx", false), ("mk", "movie_keyword", false), ("n", "name", true), ("t", "title", false)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("t", "id", "ci", "movie_id"), ("t", "id", "mk", "movie_id"), ("ci", "movie_id", "mi", "movie_id"), ("ci", "movie_id", "mi_idx", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("mi", "movie_id", "mi_idx", "movie_id"), ("mi", "movie_id", "mk", "movie_id"), ("mi_idx", "movie_id", "mk", "movie_id"), ("n", "id", "ci", "person_id"), ("it1", "id", "mi", "info_type_id"), ("it2", "id", "mi_idx", "info_type_id"), ("k", "id", "mk", "keyword_id")],
};
/// JOB 26a: 12 relations, 17 join predicates.
const Q26A: JobQuery = JobQuery {
    name: "26a",
    relations: &[("cc", "complete_cast", false), ("cct1", "comp_cast_type", true), ("cct2", "comp_cast_type", true), ("chn", "char_name", true), ("ci", "cast_info", false), ("it2", "info_type", true), ("k", "keyword", true), ("kt", "kind_type", true), ("mi_idx", "movie_info_idx", true), ("mk", "movie_keyword", false), ("n", "name", false), ("t", "title", true)],
    joins: &[("kt", "id", "t", "kind_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "ci", "movie_id"), ("t", "id", "cc", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("mk", "movie_id", "ci", "movie_id"), ("mk", "movie_id", "cc", "movie_id"), ("mk", "movie_id", "mi_idx", "movie_id"), ("ci", "movie_id", "cc", "movie_id"), ("ci", "movie_id", "mi_idx", "movie_id"), ("cc", "movie_id", "mi_idx", "movie_id"), ("chn", "id", "ci", "person_role_id"), ("n", "id", "ci", "person_id"), ("k", "id", "mk", "keyword_id"), ("cct1", "id", "cc", "subject_id"), ("cct2", "id", "cc", "status_id"), ("it2", "id", "mi_idx", "info_type_id")],
};
/// JOB 26b: 12 relations, 17 join predicates.
const Q26B: JobQuery = JobQuery {
    name: "26b",
    relations: &[("cc", "complete_cast", false), ("cct1", "comp_cast_type", true), ("cct2", "comp_cast_type", true), ("chn", "char_name", true), ("ci", "cast_info", false), ("it2", "info_type", true), ("k", "keyword", true), ("kt", "kind_type", true), ("mi_idx", "movie_info_idx", true), ("mk", "movie_keyword", false), ("n", "name", false), ("t", "title", true)],
    joins: &[("kt", "id", "t", "kind_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "ci", "movie_id"), ("t", "id", "cc", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("mk", "movie_id", "ci", "movie_id"), ("mk", "movie_id", "cc", "movie_id"), ("mk", "movie_id", "mi_idx", "movie_id"), ("ci", "movie_id", "cc", "movie_id"), ("ci", "movie_id", "mi_idx", "movie_id"), ("cc", "movie_id", "mi_idx", "movie_id"), ("chn", "id", "ci", "person_role_id"), ("n", "id", "ci", "person_id"), ("k", "id", "mk", "keyword_id"), ("cct1", "id", "cc", "subject_id"), ("cct2", "id", "cc", "status_id"), ("it2", "id", "mi_idx", "info_type_id")],
};
/// JOB 26c: 12 relations, 17 join predicates.
const Q26C: JobQuery = JobQuery {
    name: "26c",
    relations: &[("cc", "complete_cast", false), ("cct1", "comp_cast_type", true), ("cct2", "comp_cast_type", true), ("chn", "char_name", true), ("ci", "cast_info", false), ("it2", "info_type", true), ("k", "keyword", true), ("kt", "kind_type", true), ("mi_idx", "movie_info_idx", false), ("mk", "movie_keyword", false), ("n", "name", false), ("t", "title", true)],
    joins: &[("kt", "id", "t", "kind_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "ci", "movie_id"), ("t", "id", "cc", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("mk", "movie_id", "ci", "movie_id"), ("mk", "movie_id", "cc", "movie_id"), ("mk", "movie_id", "mi_idx", "movie_id"), ("ci", "movie_id", "cc", "movie_id"), ("ci", "movie_id", "mi_idx", "movie_id"), ("cc", "movie_id", "mi_idx", "movie_id"), ("chn", "id", "ci", "person_role_id"), ("n", "id", "ci", "person_id"), ("k", "id", "mk", "keyword_id"), ("cct1", "id", "cc", "subject_id"), ("cct2", "id", "cc", "status_id"), ("it2", "id", "mi_idx", "info_type_id")],
};
/// JOB 27a: 12 relations, 21 join predicates.
const Q27A: JobQuery = JobQuery {
    name: "27a",
    relations: &[("cc", "complete_cast", false), ("cct1", "comp_cast_type", true), ("cct2", "comp_cast_type", true), ("cn", "company_name", true), ("ct", "company_type", true), ("k", "keyword", true), ("lt", "link_type", true), ("mc", "movie_companies", true), ("mi", "movie_info", true), ("mk", "movie_keyword", false), ("ml", "movie_link", false), ("t", "title", true)],
    joins: &[("lt", "id", "ml", "link_type_id"), ("ml", "movie_id", "t", "id"), ("t", "id", "mk", "movie_id"), ("mk", "keyword_id", "k", "id"), ("t", "id", "mc", "movie_id"), ("mc", "company_type_id", "ct", "id"), ("mc", "company_id", "cn", "id"), ("mi", "movie_id", "t", "id"), ("t", "id", "cc", "movie_id"), ("cct1", "id", "cc", "subject_id"), ("cct2", "id", "cc", "status_id"), ("ml", "movie_id", "mk", "movie_id"), ("ml", "movie_id", "mc", "movie_id"), ("mk", "movie_id", "mc", "movie_id"), ("ml", "movie_id", "mi", "movie_id"), ("mk", "movie_id", "mi", "movie_id"), ("mc", "movie_id", "mi", "movie_id"), ("ml", "movie_id", "cc", "movie_id"), ("mk", "movie_id", "cc", "movie_id"), ("mc", "movie_id", "cc", "movie_id"), ("mi", "movie_id", "cc", "movie_id")],
};
/// JOB 27b: 12 relations, 21 join predicates.
const Q27B: JobQuery = JobQuery {
    name: "27b",
    relations: &[("cc", "complete_cast", false), ("cct1", "comp_cast_type", true), ("cct2", "comp_cast_type", true), ("cn", "company_name", true), ("ct", "company_type", true), ("k", "keyword", true), ("lt", "link_type", true), ("mc", "movie_companies", true), ("mi", "movie_info", true), ("mk", "movie_keyword", false), ("ml", "movie_link", false), ("t", "title", true)],
    joins: &[("lt", "id", "ml", "link_type_id"), ("ml", "movie_id", "t", "id"), ("t", "id", "mk", "movie_id"), ("mk", "keyword_id", "k", "id"), ("t", "id", "mc", "movie_id"), ("mc", "company_type_id", "ct", "id"), ("mc", "company_id", "cn", "id"), ("mi", "movie_id", "t", "id"), ("t", "id", "cc", "movie_id"), ("cct1", "id", "cc", "subject_id"), ("cct2", "id", "cc", "status_id"), ("ml", "movie_id", "mk", "movie_id"), ("ml", "movie_id", "mc", "movie_id"), ("mk", "movie_id", "mc", "movie_id"), ("ml", "movie_id", "mi", "movie_id"), ("mk", "movie_id", "mi", "movie_id"), ("mc", "movie_id", "mi", "movie_id"), ("ml", "movie_id", "cc", "movie_id"), ("mk", "movie_id", "cc", "movie_id"), ("mc", "movie_id", "cc", "movie_id"), ("mi", "movie_id", "cc", "movie_id")],
};
/// JOB 27c: 12 relations, 21 join predicates.
const Q27C: JobQuery = JobQuery {
    name: "27c",
    relations: &[("cc", "complete_cast", false), ("cct1", "comp_cast_type", true), ("cct2", "comp_cast_type", true), ("cn", "company_name", true), ("ct", "company_type", true), ("k", "keyword", true), ("lt", "link_type", true), ("mc", "movie_companies", true), ("mi", "movie_info", true), ("mk", "movie_keyword", false), ("ml", "movie_link", false), ("t", "title", true)],
    joins: &[("lt", "id", "ml", "link_type_id"), ("ml", "movie_id", "t", "id"), ("t", "id", "mk", "movie_id"), ("mk", "keyword_id", "k", "id"), ("t", "id", "mc", "movie_id"), ("mc", "company_type_id", "ct", "id"), ("mc", "company_id", "cn", "id"), ("mi", "movie_id", "t", "id"), ("t", "id", "cc", "movie_id"), ("cct1", "id", "cc", "subject_id"), ("cct2", "id", "cc", "status_id"), ("ml", "movie_id", "mk", "movie_id"), ("ml", "movie_id", "mc", "movie_id"), ("mk", "movie_id", "mc", "movie_id"), ("ml", "movie_id", "mi", "movie_id"), ("mk", "movie_id", "mi", "movie_id"), ("mc", "movie_id", "mi", "movie_id"), ("ml", "movie_id", "cc", "movie_id"), ("mk", "movie_id", "cc", "movie_id"), ("mc", "movie_id", "cc", "movie_id"), ("mi", "movie_id", "cc", "movie_id")],
};
/// JOB 28a: 14 relations, 23 join predicates.
const Q28A: JobQuery = JobQuery {
    name: "28a",
    relations: &[("cc", "complete_cast", false), ("cct1", "comp_cast_type", true), ("cct2", "comp_cast_type", true), ("cn", "company_name", true), ("ct", "company_type", false), ("it1", "info_type", true), ("it2", "info_type", true), ("k", "keyword", true), ("kt", "kind_type", true), ("mc", "movie_companies", true), ("mi", "movie_info", true), ("mi_idx", "movie_info_idx", true), ("mk", "movie_keyword", false), ("t", "title", true)],
    joins: &[("kt", "id", "t", "kind_id"), ("t", "id", "mi", "movie_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("t", "id", "mc", "movie_id"), ("t", "id", "cc", "movie_id"), ("mk", "movie_id", "mi", "movie_id"), ("mk", "movie_id", "mi_idx", "movie_id"), ("mk", "movie_id", "mc", "movie_id"), ("mk", "movie_id", "cc", "movie_id"), ("mi", "movie_id", "mi_idx", "movie_id"), ("mi", "movie_id", "mc", "movie_id"), ("mi", "movie_id", "cc", "movie_id"), ("mc", "movie_id", "mi_idx", "movie_id"), ("mc", "movie_id", "cc", "movie_id"), ("mi_idx", "movie_id", "cc", "movie_id"), ("k", "id", "mk", "keyword_id"), ("it1", "id", "mi", "info_type_id"), ("it2", "id", "mi_idx", "info_type_id"), ("ct", "id", "mc", "company_type_id"), ("cn", "id", "mc", "company_id"), ("cct1", "id", "cc", "subject_id"), ("cct2", "id", "cc", "status_id")],
};
/// JOB 28b: 14 relations, 23 join predicates.
const Q28B: JobQuery = JobQuery {
    name: "28b",
    relations: &[("cc", "complete_cast", false), ("cct1", "comp_cast_type", true), ("cct2", "comp_cast_type", true), ("cn", "company_name", true), ("ct", "company_type", false), ("it1", "info_type", true), ("it2", "info_type", true), ("k", "keyword", true), ("kt", "kind_type", true), ("mc", "movie_companies", true), ("mi", "movie_info", true), ("mi_idx", "movie_info_idx", true), ("mk", "movie_keyword", false), ("t", "title", true)],
    joins: &[("kt", "id", "t", "kind_id"), ("t", "id", "mi", "movie_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("t", "id", "mc", "movie_id"), ("t", "id", "cc", "movie_id"), ("mk", "movie_id", "mi", "movie_id"), ("mk", "movie_id", "mi_idx", "movie_id"), ("mk", "movie_id", "mc", "movie_id"), ("mk", "movie_id", "cc", "movie_id"), ("mi", "movie_id", "mi_idx", "movie_id"), ("mi", "movie_id", "mc", "movie_id"), ("mi", "movie_id", "cc", "movie_id"), ("mc", "movie_id", "mi_idx", "movie_id"), ("mc", "movie_id", "cc", "movie_id"), ("mi_idx", "movie_id", "cc", "movie_id"), ("k", "id", "mk", "keyword_id"), ("it1", "id", "mi", "info_type_id"), ("it2", "id", "mi_idx", "info_type_id"), ("ct", "id", "mc", "company_type_id"), ("cn", "id", "mc", "company_id"), ("cct1", "id", "cc", "subject_id"), ("cct2", "id", "cc", "status_id")],
};
/// JOB 28c: 14 relations, 23 join predicates.
const Q28C: JobQuery = JobQuery {
    name: "28c",
    relations: &[("cc", "complete_cast", false), ("cct1", "comp_cast_type", true), ("cct2", "comp_cast_type", true), ("cn", "company_name", true), ("ct", "company_type", false), ("it1", "info_type", true), ("it2", "info_type", true), ("k", "keyword", true), ("kt", "kind_type", true), ("mc", "movie_companies", true), ("mi", "movie_info", true), ("mi_idx", "movie_info_idx", true), ("mk", "movie_keyword", false), ("t", "title", true)],
    joins: &[("kt", "id", "t", "kind_id"), ("t", "id", "mi", "movie_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("t", "id", "mc", "movie_id"), ("t", "id", "cc", "movie_id"), ("mk", "movie_id", "mi", "movie_id"), ("mk", "movie_id", "mi_idx", "movie_id"), ("mk", "movie_id", "mc", "movie_id"), ("mk", "movie_id", "cc", "movie_id"), ("mi", "movie_id", "mi_idx", "movie_id"), ("mi", "movie_id", "mc", "movie_id"), ("mi", "movie_id", "cc", "movie_id"), ("mc", "movie_id", "mi_idx", "movie_id"), ("mc", "movie_id", "cc", "movie_id"), ("mi_idx", "movie_id", "cc", "movie_id"), ("k", "id", "mk", "keyword_id"), ("it1", "id", "mi", "info_type_id"), ("it2", "id", "mi_idx", "info_type_id"), ("ct", "id", "mc", "company_type_id"), ("cn", "id", "mc", "company_id"), ("cct1", "id", "cc", "subject_id"), ("cct2", "id", "cc", "status_id")],
};
/// JOB 29a: 17 relations, 28 join predicates.
const Q29A: JobQuery = JobQuery {
    name: "29a",
    relations: &[("an", "aka_name", false), ("cc", "complete_cast", false), ("cct1", "comp_cast_type", true), ("cct2", "comp_cast_type", true), ("chn", "char_name", true), ("ci", "cast_info", true), ("cn", "company_name", true), ("it", "info_type", true), ("it3", "info_type", true), ("k", "keyword", true), ("mc", "movie_companies", false), ("mi", "movie_info", true), ("mk", "movie_keyword", false), ("n", "name", true), ("pi", "person_info", false), ("rt", "role_type", true), ("t", "title", true)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mc", "movie_id"), ("t", "id", "ci", "movie_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "cc", "movie_id"), ("mc", "movie_id", "ci", "movie_id"), ("mc", "movie_id", "mi", "movie_id"), ("mc", "movie_id", "mk", "movie_id"), ("mc", "movie_id", "cc", "movie_id"), ("mi", "movie_id", "ci", "movie_id"), ("mi", "movie_id", "mk", "movie_id"), ("mi", "movie_id", "cc", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("ci", "movie_id", "cc", "movie_id"), ("mk", "movie_id", "cc", "movie_id"), ("cn", "id", "mc", "company_id"), ("it", "id", "mi", "info_type_id"), ("n", "id", "ci", "person_id"), ("rt", "id", "ci", "role_id"), ("n", "id", "an", "person_id"), ("ci", "person_id", "an", "person_id"), ("chn", "id", "ci", "person_role_id"), ("n", "id", "pi", "person_id"), ("ci", "person_id", "pi", "person_id"), ("it3", "id", "pi", "info_type_id"), ("k", "id", "mk", "keyword_id"), ("cct1", "id", "cc", "subject_id"), ("cct2", "id", "cc", "status_id")],
};
/// JOB 29b: 17 relations, 28 join predicates.
const Q29B: JobQuery = JobQuery {
    name: "29b",
    relations: &[("an", "aka_name", false), ("cc", "complete_cast", false), ("cct1", "comp_cast_type", true), ("cct2", "comp_cast_type", true), ("chn", "char_name", true), ("ci", "cast_info", true), ("cn", "company_name", true), ("it", "info_type", true), ("it3", "info_type", true), ("k", "keyword", true), ("mc", "movie_companies", false), ("mi", "movie_info", true), ("mk", "movie_keyword", false), ("n", "name", true), ("pi", "person_info", false), ("rt", "role_type", true), ("t", "title", true)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mc", "movie_id"), ("t", "id", "ci", "movie_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "cc", "movie_id"), ("mc", "movie_id", "ci", "movie_id"), ("mc", "movie_id", "mi", "movie_id"), ("mc", "movie_id", "mk", "movie_id"), ("mc", "movie_id", "cc", "movie_id"), ("mi", "movie_id", "ci", "movie_id"), ("mi", "movie_id", "mk", "movie_id"), ("mi", "movie_id", "cc", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("ci", "movie_id", "cc", "movie_id"), ("mk", "movie_id", "cc", "movie_id"), ("cn", "id", "mc", "company_id"), ("it", "id", "mi", "info_type_id"), ("n", "id", "ci", "person_id"), ("rt", "id", "ci", "role_id"), ("n", "id", "an", "person_id"), ("ci", "person_id", "an", "person_id"), ("chn", "id", "ci", "person_role_id"), ("n", "id", "pi", "person_id"), ("ci", "person_id", "pi", "person_id"), ("it3", "id", "pi", "info_type_id"), ("k", "id", "mk", "keyword_id"), ("cct1", "id", "cc", "subject_id"), ("cct2", "id", "cc", "status_id")],
};
/// JOB 29c: 17 relations, 28 join predicates.
const Q29C: JobQuery = JobQuery {
    name: "29c",
    relations: &[("an", "aka_name", false), ("cc", "complete_cast", false), ("cct1", "comp_cast_type", true), ("cct2", "comp_cast_type", true), ("chn", "char_name", false), ("ci", "cast_info", true), ("cn", "company_name", true), ("it", "info_type", true), ("it3", "info_type", true), ("k", "keyword", true), ("mc", "movie_companies", false), ("mi", "movie_info", true), ("mk", "movie_keyword", false), ("n", "name", true), ("pi", "person_info", false), ("rt", "role_type", true), ("t", "title", true)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mc", "movie_id"), ("t", "id", "ci", "movie_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "cc", "movie_id"), ("mc", "movie_id", "ci", "movie_id"), ("mc", "movie_id", "mi", "movie_id"), ("mc", "movie_id", "mk", "movie_id"), ("mc", "movie_id", "cc", "movie_id"), ("mi", "movie_id", "ci", "movie_id"), ("mi", "movie_id", "mk", "movie_id"), ("mi", "movie_id", "cc", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("ci", "movie_id", "cc", "movie_id"), ("mk", "movie_id", "cc", "movie_id"), ("cn", "id", "mc", "company_id"), ("it", "id", "mi", "info_type_id"), ("n", "id", "ci", "person_id"), ("rt", "id", "ci", "role_id"), ("n", "id", "an", "person_id"), ("ci", "person_id", "an", "person_id"), ("chn", "id", "ci", "person_role_id"), ("n", "id", "pi", "person_id"), ("ci", "person_id", "pi", "person_id"), ("it3", "id", "pi", "info_type_id"), ("k", "id", "mk", "keyword_id"), ("cct1", "id", "cc", "subject_id"), ("cct2", "id", "cc", "status_id")],
};
/// JOB 30a: 12 relations, 21 join predicates.
const Q30A: JobQuery = JobQuery {
    name: "30a",
    relations: &[("cc", "complete_cast", false), ("cct1", "comp_cast_type", true), ("cct2", "comp_cast_type", true), ("ci", "cast_info", true), ("it1", "info_type", true), ("it2", "info_type", true), ("k", "keyword", true), ("mi", "movie_info", true), ("mi_idx", "movie_info_idx", false), ("mk", "movie_keyword", false), ("n", "name", true), ("t", "title", true)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("t", "id", "ci", "movie_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "cc", "movie_id"), ("ci", "movie_id", "mi", "movie_id"), ("ci", "movie_id", "mi_idx", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("ci", "movie_id", "cc", "movie_id"), ("mi", "movie_id", "mi_idx", "movie_id"), ("mi", "movie_id", "mk", "movie_id"), ("mi", "movie_id", "cc", "movie_id"), ("mi_idx", "movie_id", "mk", "movie_id"), ("mi_idx", "movie_id", "cc", "movie_id"), ("mk", "movie_id", "cc", "movie_id"), ("n", "id", "ci", "person_id"), ("it1", "id", "mi", "info_type_id"), ("it2", "id", "mi_idx", "info_type_id"), ("k", "id", "mk", "keyword_id"), ("cct1", "id", "cc", "subject_id"), ("cct2", "id", "cc", "status_id")],
};
/// JOB 30b: 12 relations, 21 join predicates.
const Q30B: JobQuery = JobQuery {
    name: "30b",
    relations: &[("cc", "complete_cast", false), ("cct1", "comp_cast_type", true), ("cct2", "comp_cast_type", true), ("ci", "cast_info", true), ("it1", "info_type", true), ("it2", "info_type", true), ("k", "keyword", true), ("mi", "movie_info", true), ("mi_idx", "movie_info_idx", false), ("mk", "movie_keyword", false), ("n", "name", true), ("t", "title", true)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("t", "id", "ci", "movie_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "cc", "movie_id"), ("ci", "movie_id", "mi", "movie_id"), ("ci", "movie_id", "mi_idx", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("ci", "movie_id", "cc", "movie_id"), ("mi", "movie_id", "mi_idx", "movie_id"), ("mi", "movie_id", "mk", "movie_id"), ("mi", "movie_id", "cc", "movie_id"), ("mi_idx", "movie_id", "mk", "movie_id"), ("mi_idx", "movie_id", "cc", "movie_id"), ("mk", "movie_id", "cc", "movie_id"), ("n", "id", "ci", "person_id"), ("it1", "id", "mi", "info_type_id"), ("it2", "id", "mi_idx", "info_type_id"), ("k", "id", "mk", "keyword_id"), ("cct1", "id", "cc", "subject_id"), ("cct2", "id", "cc", "status_id")],
};
/// JOB 30c: 12 relations, 21 join predicates.
const Q30C: JobQuery = JobQuery {
    name: "30c",
    relations: &[("cc", "complete_cast", false), ("cct1", "comp_cast_type", true), ("cct2", "comp_cast_type", true), ("ci", "cast_info", true), ("it1", "info_type", true), ("it2", "info_type", true), ("k", "keyword", true), ("mi", "movie_info", true), ("mi_idx", "movie_info_idx", false), ("mk", "movie_keyword", false), ("n", "name", true), ("t", "title", false)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("t", "id", "ci", "movie_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "cc", "movie_id"), ("ci", "movie_id", "mi", "movie_id"), ("ci", "movie_id", "mi_idx", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("ci", "movie_id", "cc", "movie_id"), ("mi", "movie_id", "mi_idx", "movie_id"), ("mi", "movie_id", "mk", "movie_id"), ("mi", "movie_id", "cc", "movie_id"), ("mi_idx", "movie_id", "mk", "movie_id"), ("mi_idx", "movie_id", "cc", "movie_id"), ("mk", "movie_id", "cc", "movie_id"), ("n", "id", "ci", "person_id"), ("it1", "id", "mi", "info_type_id"), ("it2", "id", "mi_idx", "info_type_id"), ("k", "id", "mk", "keyword_id"), ("cct1", "id", "cc", "subject_id"), ("cct2", "id", "cc", "status_id")],
};
/// JOB 31a: 11 relations, 20 join predicates.
const Q31A: JobQuery = JobQuery {
    name: "31a",
    relations: &[("ci", "cast_info", true), ("cn", "company_name", true), ("it1", "info_type", true), ("it2", "info_type", true), ("k", "keyword", true), ("mc", "movie_companies", false), ("mi", "movie_info", true), ("mi_idx", "movie_info_idx", false), ("mk", "movie_keyword", false), ("n", "name", true), ("t", "title", false)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("t", "id", "ci", "movie_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "mc", "movie_id"), ("ci", "movie_id", "mi", "movie_id"), ("ci", "movie_id", "mi_idx", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("ci", "movie_id", "mc", "movie_id"), ("mi", "movie_id", "mi_idx", "movie_id"), ("mi", "movie_id", "mk", "movie_id"), ("mi", "movie_id", "mc", "movie_id"), ("mi_idx", "movie_id", "mk", "movie_id"), ("mi_idx", "movie_id", "mc", "movie_id"), ("mk", "movie_id", "mc", "movie_id"), ("n", "id", "ci", "person_id"), ("it1", "id", "mi", "info_type_id"), ("it2", "id", "mi_idx", "info_type_id"), ("k", "id", "mk", "keyword_id"), ("cn", "id", "mc", "company_id")],
};
/// JOB 31b: 11 relations, 20 join predicates.
const Q31B: JobQuery = JobQuery {
    name: "31b",
    relations: &[("ci", "cast_info", true), ("cn", "company_name", true), ("it1", "info_type", true), ("it2", "info_type", true), ("k", "keyword", true), ("mc", "movie_companies", true), ("mi", "movie_info", true), ("mi_idx", "movie_info_idx", false), ("mk", "movie_keyword", false), ("n", "name", true), ("t", "title", true)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("t", "id", "ci", "movie_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "mc", "movie_id"), ("ci", "movie_id", "mi", "movie_id"), ("ci", "movie_id", "mi_idx", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("ci", "movie_id", "mc", "movie_id"), ("mi", "movie_id", "mi_idx", "movie_id"), ("mi", "movie_id", "mk", "movie_id"), ("mi", "movie_id", "mc", "movie_id"), ("mi_idx", "movie_id", "mk", "movie_id"), ("mi_idx", "movie_id", "mc", "movie_id"), ("mk", "movie_id", "mc", "movie_id"), ("n", "id", "ci", "person_id"), ("it1", "id", "mi", "info_type_id"), ("it2", "id", "mi_idx", "info_type_id"), ("k", "id", "mk", "keyword_id"), ("cn", "id", "mc", "company_id")],
};
/// JOB 31c: 11 relations, 20 join predicates.
const Q31C: JobQuery = JobQuery {
    name: "31c",
    relations: &[("ci", "cast_info", true), ("cn", "company_name", true), ("it1", "info_type", true), ("it2", "info_type", true), ("k", "keyword", true), ("mc", "movie_companies", false), ("mi", "movie_info", true), ("mi_idx", "movie_info_idx", false), ("mk", "movie_keyword", false), ("n", "name", false), ("t", "title", false)],
    joins: &[("t", "id", "mi", "movie_id"), ("t", "id", "mi_idx", "movie_id"), ("t", "id", "ci", "movie_id"), ("t", "id", "mk", "movie_id"), ("t", "id", "mc", "movie_id"), ("ci", "movie_id", "mi", "movie_id"), ("ci", "movie_id", "mi_idx", "movie_id"), ("ci", "movie_id", "mk", "movie_id"), ("ci", "movie_id", "mc", "movie_id"), ("mi", "movie_id", "mi_idx", "movie_id"), ("mi", "movie_id", "mk", "movie_id"), ("mi", "movie_id", "mc", "movie_id"), ("mi_idx", "movie_id", "mk", "movie_id"), ("mi_idx", "movie_id", "mc", "movie_id"), ("mk", "movie_id", "mc", "movie_id"), ("n", "id", "ci", "person_id"), ("it1", "id", "mi", "info_type_id"), ("it2", "id", "mi_idx", "info_type_id"), ("k", "id", "mk", "keyword_id"), ("cn", "id", "mc", "company_id")],
};
/// JOB 32a: 6 relations, 6 join predicates.
const Q32A: JobQuery = JobQuery {
    name: "32a",
    relations: &[("k", "keyword", true), ("lt", "link_type", false), ("mk", "movie_keyword", false), ("ml", "movie_link", false), ("t1", "title", false), ("t2", "title", false)],
    joins: &[("mk", "keyword_id", "k", "id"), ("t1", "id", "mk", "movie_id"), ("ml", "movie_id", "t1", "id"), ("ml", "linked_movie_id", "t2", "id"), ("lt", "id", "ml", "link_type_id"), ("mk", "movie_id", "t1", "id")],
};
/// JOB 32b: 6 relations, 6 join predicates.
const Q32B: JobQuery = JobQuery {
    name: "32b",
    relations: &[("k", "keyword", true), ("lt", "link_type", false), ("mk", "movie_keyword", false), ("ml", "movie_link", false), ("t1", "title", false), ("t2", "title", false)],
    joins: &[("mk", "keyword_id", "k", "id"), ("t1", "id", "mk", "movie_id"), ("ml", "movie_id", "t1", "id"), ("ml", "linked_movie_id", "t2", "id"), ("lt", "id", "ml", "link_type_id"), ("mk", "movie_id", "t1", "id")],
};
/// JOB 33a: 14 relations, 19 join predicates.
const Q33A: JobQuery = JobQuery {
    name: "33a",
    relations: &[("cn1", "company_name", true), ("cn2", "company_name", false), ("it1", "info_type", true), ("it2", "info_type", true), ("kt1", "kind_type", true), ("kt2", "kind_type", true), ("lt", "link_type", true), ("mc1", "movie_companies", false), ("mc2", "movie_companies", false), ("mi_idx1", "movie_info_idx", false), ("mi_idx2", "movie_info_idx", true), ("ml", "movie_link", false), ("t1", "title", false), ("t2", "title", true)],
    joins: &[("lt", "id", "ml", "link_type_id"), ("t1", "id", "ml", "movie_id"), ("t2", "id", "ml", "linked_movie_id"), ("it1", "id", "mi_idx1", "info_type_id"), ("t1", "id", "mi_idx1", "movie_id"), ("kt1", "id", "t1", "kind_id"), ("cn1", "id", "mc1", "company_id"), ("t1", "id", "mc1", "movie_id"), ("ml", "movie_id", "mi_idx1", "movie_id"), ("ml", "movie_id", "mc1", "movie_id"), ("mi_idx1", "movie_id", "mc1", "movie_id"), ("it2", "id", "mi_idx2", "info_type_id"), ("t2", "id", "mi_idx2", "movie_id"), ("kt2", "id", "t2", "kind_id"), ("cn2", "id", "mc2", "company_id"), ("t2", "id", "mc2", "movie_id"), ("ml", "linked_movie_id", "mi_idx2", "movie_id"), ("ml", "linked_movie_id", "mc2", "movie_id"), ("mi_idx2", "movie_id", "mc2", "movie_id")],
};
/// JOB 33b: 14 relations, 19 join predicates.
const Q33B: JobQuery = JobQuery {
    name: "33b",
    relations: &[("cn1", "company_name", true), ("cn2", "company_name", false), ("it1", "info_type", true), ("it2", "info_type", true), ("kt1", "kind_type", true), ("kt2", "kind_type", true), ("lt", "link_type", true), ("mc1", "movie_companies", false), ("mc2", "movie_companies", false), ("mi_idx1", "movie_info_idx", false), ("mi_idx2", "movie_info_idx", true), ("ml", "movie_link", false), ("t1", "title", false), ("t2", "title", true)],
    joins: &[("lt", "id", "ml", "link_type_id"), ("t1", "id", "ml", "movie_id"), ("t2", "id", "ml", "linked_movie_id"), ("it1", "id", "mi_idx1", "info_type_id"), ("t1", "id", "mi_idx1", "movie_id"), ("kt1", "id", "t1", "kind_id"), ("cn1", "id", "mc1", "company_id"), ("t1", "id", "mc1", "movie_id"), ("ml", "movie_id", "mi_idx1", "movie_id"), ("ml", "movie_id", "mc1", "movie_id"), ("mi_idx1", "movie_id", "mc1", "movie_id"), ("it2", "id", "mi_idx2", "info_type_id"), ("t2", "id", "mi_idx2", "movie_id"), ("kt2", "id", "t2", "kind_id"), ("cn2", "id", "mc2", "company_id"), ("t2", "id", "mc2", "movie_id"), ("ml", "linked_movie_id", "mi_idx2", "movie_id"), ("ml", "linked_movie_id", "mc2", "movie_id"), ("mi_idx2", "movie_id", "mc2", "movie_id")],
};
/// JOB 33c: 14 relations, 19 join predicates.
const Q33C: JobQuery = JobQuery {
    name: "33c",
    relations: &[("cn1", "company_name", true), ("cn2", "company_name", false), ("it1", "info_type", true), ("it2", "info_type", true), ("kt1", "kind_type", true), ("kt2", "kind_type", true), ("lt", "link_type", true), ("mc1", "movie_companies", false), ("mc2", "movie_companies", false), ("mi_idx1", "movie_info_idx", false), ("mi_idx2", "movie_info_idx", true), ("ml", "movie_link", false), ("t1", "title", false), ("t2", "title", true)],
    joins: &[("lt", "id", "ml", "link_type_id"), ("t1", "id", "ml", "movie_id"), ("t2", "id", "ml", "linked_movie_id"), ("it1", "id", "mi_idx1", "info_type_id"), ("t1", "id", "mi_idx1", "movie_id"), ("kt1", "id", "t1", "kind_id"), ("cn1", "id", "mc1", "company_id"), ("t1", "id", "mc1", "movie_id"), ("ml", "movie_id", "mi_idx1", "movie_id"), ("ml", "movie_id", "mc1", "movie_id"), ("mi_idx1", "movie_id", "mc1", "movie_id"), ("it2", "id", "mi_idx2", "info_type_id"), ("t2", "id", "mi_idx2", "movie_id"), ("kt2", "id", "t2", "kind_id"), ("cn2", "id", "mc2", "company_id"), ("t2", "id", "mc2", "movie_id"), ("ml", "linked_movie_id", "mi_idx2", "movie_id"), ("ml", "linked_movie_id", "mc2", "movie_id"), ("mi_idx2", "movie_id", "mc2", "movie_id")],
};

const JOB_QUERIES: &[&JobQuery] = &[&Q1A, &Q1B, &Q1C, &Q1D, &Q2A, &Q2B, &Q2C, &Q2D, &Q3A, &Q3B, &Q3C, &Q4A, &Q4B, &Q4C, &Q5A, &Q5B, &Q5C, &Q6A, &Q6B, &Q6C, &Q6D, &Q6E, &Q6F, &Q7A, &Q7B, &Q7C, &Q8A, &Q8B, &Q8C, &Q8D, &Q9A, &Q9B, &Q9C, &Q9D, &Q10A, &Q10B, &Q10C, &Q11A, &Q11B, &Q11C, &Q11D, &Q12A, &Q12B, &Q12C, &Q13A, &Q13B, &Q13C, &Q13D, &Q14A, &Q14B, &Q14C, &Q15A, &Q15B, &Q15C, &Q15D, &Q16A, &Q16B, &Q16C, &Q16D, &Q17A, &Q17B, &Q17C, &Q17D, &Q17E, &Q17F, &Q18A, &Q18B, &Q18C, &Q19A, &Q19B, &Q19C, &Q19D, &Q20A, &Q20B, &Q20C, &Q21A, &Q21B, &Q21C, &Q22A, &Q22B, &Q22C, &Q22D, &Q23A, &Q23B, &Q23C, &Q24A, &Q24B, &Q25A, &Q25B, &Q25C, &Q26A, &Q26B, &Q26C, &Q27A, &Q27B, &Q27C, &Q28A, &Q28B, &Q28C, &Q29A, &Q29B, &Q29C, &Q30A, &Q30B, &Q30C, &Q31A, &Q31B, &Q31C, &Q32A, &Q32B, &Q33A, &Q33B, &Q33C];
