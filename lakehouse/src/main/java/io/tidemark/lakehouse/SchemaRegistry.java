package io.tidemark.lakehouse;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.avro.Schema;
import org.apache.avro.SchemaParseException;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Where Avro schemas are found by the id of their Confluent wire-format header (the events' writer
 * schemas) and registered (the Kafka output's key and value schemas): a schema registry speaking
 * Confluent's REST API ({@code http://...}: {@code GET /schemas/ids/{id}}, {@code POST
 * /subjects/{subject}/versions}), or a directory of schema files named by id ({@code 7.avsc}), a
 * registry exported to files.
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
            return Optional.of("the schema registry at " + location + " does not answer: " + Errors.named(e));
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
                            + " s (schema id " + id + "): " + Errors.named(e), e);
                }
                if (System.nanoTime() - lastWarn > 60_000_000_000L) {
                    LOG.warn("the schema registry at {} does not answer ({}); waiting for it to look up schema id {}", location, Errors.named(e), id);
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
        } catch (SchemaParseException e) {
            LOG.warn("schema id {} of the schema registry at {} is not an Avro schema ({}); its records go to dead_letter as UNKNOWN_SCHEMA", id,
                    location, e.getMessage());
            return Optional.empty();
        }
    }

    /**
     * Registers {@code schema} under {@code subject} (Confluent's TopicNameStrategy names them
     * {@code <topic>-key} and {@code <topic>-value}) and returns its id: the one the registry already
     * has for the same schema, or a new one. A registry: {@code POST /subjects/{subject}/versions},
     * which checks the schema against the subject's compatibility rule and refuses an incompatible one
     * (the registry's message is in the exception). A directory: the id of the {@code <id>.avsc} file
     * that holds the same schema, else the next free id, claimed by creating its file, so two
     * publishers registering at once never share an id; a directory keeps no subjects and checks no
     * compatibility.
     *
     * @throws IOException the registry did not answer, or refused the schema
     */
    public int register(String subject, Schema schema) throws IOException {
        if (http()) {
            String body = JSON.writeValueAsString(Map.of("schema", schema.toString()));
            HttpResponse<String> r;
            try {
                r = client().send(HttpRequest.newBuilder(URI.create(location + "/subjects/" + URLEncoder.encode(subject,
                                StandardCharsets.UTF_8) + "/versions")).timeout(Duration.ofSeconds(30))
                        .header("Content-Type", "application/vnd.schemaregistry.v1+json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                        HttpResponse.BodyHandlers.ofString());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted", e);
            }
            if (r.statusCode() != 200) {
                throw new IOException("the schema registry at " + location + " refused the schema of subject " + subject + " with HTTP "
                        + r.statusCode() + ": " + JSON.readTree(r.body()).path("message").asText(r.body()));
            }
            int id = JSON.readTree(r.body()).path("id").asInt(-1);
            if (id < 0) {
                throw new IOException("the schema registry at " + location + " answered the registration of " + subject + " without an id: "
                        + r.body());
            }
            FETCHED.putIfAbsent(location + "#" + id, schema);
            return id;
        }
        Path dir = Path.of(location);
        if (!Files.isDirectory(dir)) {
            throw new IOException("the schema directory " + location + " does not exist");
        }
        int highest = 0;
        try (var files = Files.list(dir)) {
            for (Path f : files.toList()) {
                String name = f.getFileName().toString();
                if (!name.matches("[1-9][0-9]{0,8}\\.avsc")) {
                    continue;
                }
                int id = Integer.parseInt(name.substring(0, name.length() - 5));
                highest = Math.max(highest, id);
                try {
                    if (new Schema.Parser().parse(Files.readString(f)).equals(schema)) {
                        return id;
                    }
                } catch (SchemaParseException e) {
                    // not a schema: its id stays taken
                }
            }
        }
        for (int id = highest + 1; ; id++) {
            try {
                Files.writeString(dir.resolve(id + ".avsc"), schema.toString(true), StandardOpenOption.CREATE_NEW);
                return id;
            } catch (FileAlreadyExistsException taken) {
                // another publisher claimed it a moment ago: for the same schema (two registering at once), or the next one
                try {
                    if (new Schema.Parser().parse(Files.readString(taken.getFile() == null ? dir.resolve(id + ".avsc") : Path.of(taken.getFile())))
                            .equals(schema)) {
                        return id;
                    }
                } catch (SchemaParseException | IOException halfWritten) {
                    // being written: a schema of its own
                }
            }
        }
    }

    /**
     * A record in Confluent's wire format: the magic byte 0, the schema's id (4 bytes, big-endian),
     * then the record in Avro's binary encoding, written by Avro's own {@code GenericDatumWriter}.
     */
    public static byte[] wire(int id, GenericRecord record) {
        return wire(id, record, new GenericDatumWriter<>(record.getSchema()));
    }

    /** As {@link #wire(int, org.apache.avro.generic.GenericRecord)}, with a writer made once for the record's schema. */
    public static byte[] wire(int id, GenericRecord record,
                              GenericDatumWriter<GenericRecord> writer) {
        try {
            ByteArrayOutputStream out = new ByteArrayOutputStream(64);
            out.write(0);
            out.write(ByteBuffer.allocate(4).putInt(id).array());
            BinaryEncoder e = EncoderFactory.get().directBinaryEncoder(out, null);
            writer.write(record, e);
            e.flush();
            return out.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static HttpClient client;

    private static synchronized HttpClient client() {
        if (client == null) {
            client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        }
        return client;
    }
}
