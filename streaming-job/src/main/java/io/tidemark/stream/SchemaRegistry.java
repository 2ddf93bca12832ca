package io.tidemark.stream;

import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.avro.Schema;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Where the writer schemas of Avro events are found by the id of their Confluent wire-format header:
 * a schema registry speaking Confluent's REST API ({@code http://...}: {@code GET /schemas/ids/{id}}),
 * or a directory of schema files named by id ({@code 7.avsc}), a registry exported to files.
 *
 * <p>A schema is fetched once per id and JVM and kept: an id never changes its schema. An id the
 * registry does not know is a property of the record (its reason is UNKNOWN_SCHEMA); a registry that
 * does not answer is not: {@link #writerSchema} then waits, retrying with a growing pause and one
 * WARN line a minute, so the stream waits for it and resumes with nothing lost.
 */
public final class SchemaRegistry implements Serializable {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(SchemaRegistry.class);
    /**
     * Per JVM: every task of every batch shares the schemas fetched (key: location + "#" + id). An id
     * the registry did not know is not kept here (a decoder remembers it for its task only): a schema
     * registered a moment after its first record arrived is found by the next batch.
     */
    private static final ConcurrentHashMap<String, Schema> FETCHED = new ConcurrentHashMap<>();
    private static final ObjectMapper JSON = new ObjectMapper();

    private final String location;
    private final Duration maxWait;

    /**
     * @param location an {@code http(s)://} URL of a Confluent-compatible registry, or a directory
     * @param maxWait  how long a lookup waits for a registry that does not answer before it fails the
     *                 batch (the stream, in its turn, fails and can be restarted)
     */
    public SchemaRegistry(String location, Duration maxWait) {
        this.location = location.endsWith("/") ? location.substring(0, location.length() - 1) : location;
        this.maxWait = maxWait;
    }

    public String location() {
        return location;
    }

    private boolean http() {
        return location.startsWith("http://") || location.startsWith("https://");
    }

    /**
     * Whether the registry answers now; a one-line reason when it does not. The stream asks once
     * before it starts, so a registry that is down or mistyped is an error there, not a wait.
     */
    public Optional<String> unreachable() {
        if (!http()) {
            Path dir = Path.of(location);
            return Files.isDirectory(dir) ? Optional.empty() : Optional.of("the schema directory " + location + " does not exist");
        }
        try {
            HttpResponse<String> r = client().send(HttpRequest.newBuilder(URI.create(location + "/subjects")).timeout(Duration.ofSeconds(10))
                    .GET().build(), HttpResponse.BodyHandlers.ofString());
            return r.statusCode() == 200 ? Optional.empty()
                    : Optional.of("the schema registry at " + location + " answered GET /subjects with HTTP " + r.statusCode());
        } catch (IOException e) {
            return Optional.of("the schema registry at " + location + " does not answer: " + describe(e));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.of("interrupted while reaching the schema registry at " + location);
        }
    }

    /** The writer schema of {@code id}; empty when the registry does not know it. Waits while the registry does not answer. */
    public Optional<Schema> writerSchema(int id) {
        String key = location + "#" + id;
        Schema known = FETCHED.get(key);
        if (known != null) {
            return Optional.of(known);
        }
        Optional<Schema> fetched = fetchWaiting(id);
        fetched.ifPresent(s -> FETCHED.putIfAbsent(key, s));
        return fetched;
    }

    private Optional<Schema> fetchWaiting(int id) {
        long deadline = System.nanoTime() + maxWait.toNanos();
        long pauseMs = 500;
        long lastWarn = 0;
        while (true) {
            try {
                return fetch(id);
            } catch (IOException e) {
                if (System.nanoTime() > deadline) {
                    throw new UncheckedIOException("the schema registry at " + location + " has not answered for " + maxWait.toSeconds()
                            + " s (schema id " + id + "): " + describe(e), e);
                }
                if (System.nanoTime() - lastWarn > 60_000_000_000L) {
                    LOG.warn("the schema registry at {} does not answer ({}); waiting for it to look up schema id {}", location, describe(e), id);
                    lastWarn = System.nanoTime();
                }
                try {
                    Thread.sleep(pauseMs);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted while waiting for the schema registry at " + location, ie);
                }
                pauseMs = Math.min(pauseMs * 2, 5_000);
            }
        }
    }

    /** One lookup: the schema, empty for an unknown id, or an IOException when the registry did not answer. */
    private Optional<Schema> fetch(int id) throws IOException {
        String text;
        if (http()) {
            HttpResponse<String> r;
            try {
                r = client().send(HttpRequest.newBuilder(URI.create(location + "/schemas/ids/" + id)).timeout(Duration.ofSeconds(10)).GET().build(),
                        HttpResponse.BodyHandlers.ofString());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted", e);
            }
            if (r.statusCode() == 404) {
                return Optional.empty();
            }
            if (r.statusCode() != 200) {
                throw new IOException("HTTP " + r.statusCode() + " for schema id " + id);
            }
            JsonNode body = JSON.readTree(r.body());
            String type = body.path("schemaType").asText("AVRO");
            if (!type.equals("AVRO")) {
                return Optional.empty();
            }
            text = body.path("schema").asText();
        } else {
            Path file = Path.of(location, id + ".avsc");
            if (!Files.isRegularFile(file)) {
                if (!Files.isDirectory(Path.of(location))) {
                    throw new IOException("the schema directory " + location + " is gone");
                }
                return Optional.empty();
            }
            text = Files.readString(file);
        }
        try {
            return Optional.of(new Schema.Parser().parse(text));
        } catch (org.apache.avro.SchemaParseException e) {
            LOG.warn("schema id {} of the schema registry at {} is not an Avro schema ({}); its records go to dead_letter as UNKNOWN_SCHEMA", id,
                    location, e.getMessage());
            return Optional.empty();
        }
    }

    private static HttpClient client;

    private static synchronized HttpClient client() {
        if (client == null) {
            client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        }
        return client;
    }

    private static String describe(IOException e) {
        String m = e.getMessage();
        return e.getClass().getSimpleName() + (m == null ? "" : ": " + m);
    }
}
