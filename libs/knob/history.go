package knob

import (
	"errors"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// The PostgreSQL history knobs (gate-runtime §5.5, §8.1). PG_HOST unset
// (and PG_URL unset) means no history, which is fully supported: Gate
// limits exactly as well and cannot answer anything about yesterday.
var (
	// PGHost is the database host; unset = no history.
	PGHost = Text{Name: "PG_HOST", Check: checkHost}
	// PGPort is the database port.
	PGPort = Int{Name: "PG_PORT", Default: DefaultPGPort, Min: 1, Max: 65535}
	// PGUser is the database role.
	PGUser = Text{Name: "PG_USER", Default: DefaultPGUser}
	// PGPassword is the role's password (empty = none, e.g. trust auth).
	PGPassword = Text{Name: "PG_PASSWORD"}
	// PGDatabase is the database name.
	PGDatabase = Text{Name: "PG_DATABASE", Default: DefaultPGDatabase}
	// PGURL is one postgres:// connection string instead of the five
	// above; when set it wins over them.
	PGURL = Text{Name: "PG_URL", Check: checkPGURL}
	// HistorySchema is the schema holding Gate's tables.
	HistorySchema = Text{Name: "GATE_HISTORY_SCHEMA", Default: DefaultHistorySchema, Normalize: strings.ToLower, Check: checkSchema}
)

// Defaults of the history knobs.
const (
	// DefaultPGPort is PG_PORT's default.
	DefaultPGPort = 5432
	// DefaultPGUser is PG_USER's default.
	DefaultPGUser = "postgres"
	// DefaultPGDatabase is PG_DATABASE's default.
	DefaultPGDatabase = "postgres"
	// DefaultHistorySchema is GATE_HISTORY_SCHEMA's default.
	DefaultHistorySchema = "gate"
)

// History is the PostgreSQL connection the history knobs describe. The
// zero value is "no history".
type History struct {
	// Host is PG_HOST ("" = no history unless URL is set).
	Host string
	// Port is PG_PORT.
	Port int
	// User, Password and Database are PG_USER, PG_PASSWORD and PG_DATABASE.
	User, Password, Database string
	// URL is PG_URL; when set it is the connection string.
	URL string
	// Schema is GATE_HISTORY_SCHEMA.
	Schema string
}

// Enabled reports whether a database is configured.
func (h History) Enabled() bool { return h.Host != "" || h.URL != "" }

// Knob names the knob an operator fixes when the database does not answer:
// PG_URL when it is the connection string, PG_HOST otherwise.
func (h History) Knob() string {
	if h.URL != "" {
		return PGURL.Name
	}
	return PGHost.Name
}

// ConnString is the connection string: PG_URL as given, or a postgres://
// URL built from the five PG_ knobs. "" when history is off.
func (h History) ConnString() string {
	switch {
	case h.URL != "":
		return h.URL
	case h.Host == "":
		return ""
	}
	u := url.URL{Scheme: "postgres", Host: net.JoinHostPort(h.Host, strconv.Itoa(h.Port)), Path: "/" + h.Database}
	if h.Password != "" {
		u.User = url.UserPassword(h.User, h.Password)
	} else {
		u.User = url.User(h.User)
	}
	return u.String()
}

// Describe is the connection for messages, without the password: the knob
// and what it says.
func (h History) Describe() string {
	if h.URL != "" {
		if u, err := url.Parse(h.URL); err == nil {
			return PGURL.Name + "=" + u.Redacted()
		}
		return PGURL.Name + " (unparseable)"
	}
	return PGHost.Name + "=" + h.Host + " " + PGPort.Name + "=" + strconv.Itoa(h.Port) + " " + PGUser.Name + "=" + h.User + " " + PGDatabase.Name + "=" + h.Database
}

// ReadHistory reads the history knobs through getenv. Every unreadable
// knob is reported, joined into one error.
func ReadHistory(getenv func(string) string) (History, error) {
	var h History
	var errs []error
	text := func(k Text, dst *string) {
		v, err := k.Read(getenv)
		*dst = v
		errs = append(errs, err)
	}
	text(PGHost, &h.Host)
	port, err := PGPort.Read(getenv)
	h.Port = port
	errs = append(errs, err)
	text(PGUser, &h.User)
	// A password is taken verbatim: blanks may be part of it.
	h.Password = getenv(PGPassword.Name)
	text(PGDatabase, &h.Database)
	text(PGURL, &h.URL)
	text(HistorySchema, &h.Schema)
	return h, errors.Join(errs...)
}

var schemaRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

func checkSchema(v string) string {
	if !schemaRE.MatchString(v) {
		return "is not a plain PostgreSQL schema name (1–63 of [a-z0-9_], not starting with a digit); set it to e.g. " + DefaultHistorySchema
	}
	return ""
}

func checkHost(v string) string {
	if strings.ContainsAny(v, " /?#@") {
		return "is not a host name or address; set it to the database host (e.g. 127.0.0.1), or use PG_URL for a full connection string"
	}
	return ""
}

func checkPGURL(v string) string {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return "is not a postgres:// URL; set it to e.g. postgres://postgres@127.0.0.1:5432/postgres, or unset it and use PG_HOST"
	}
	return ""
}
