package io.tidemark.lakehouse;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;

import org.junit.jupiter.api.Test;

class JobMainTest {

    private static final JobMain.Spec SPEC = JobMain.Spec.of("catalog", "Usage: ...\n").words("register", "status")
            .flags("--replace", "--dry-run").valued("--out", "--days");

    private static JobMain.Arguments parse(String... args) {
        return JobMain.parse(SPEC, args, Map.of());
    }

    @Test
    void optionsWordsAndSettingsInAnyOrder() {
        JobMain.Arguments a = parse("lakehouse=/data/lh", "--out", "r.html", "status", "--days=3", "--dry-run");
        assertThat(a.help()).isFalse();
        assertThat(a.word()).contains("status");
        assertThat(a.has("--dry-run")).isTrue();
        assertThat(a.has("--replace")).isFalse();
        assertThat(a.value("--out")).contains("r.html");
        assertThat(a.value("--days")).contains("3");
        assertThat(a.config().lakehouseUri()).endsWith("/data/lh");
        JobMain.Arguments none = parse();
        assertThat(none.word()).isEmpty();
        assertThat(none.value("--out")).isEmpty();
    }

    @Test
    void helpWinsOverWhateverFollows() {
        assertThat(parse("--help", "--nonsense").help()).isTrue();
        assertThat(parse("status", "-h").help()).isTrue();
        assertThat(JobMain.usage(SPEC)).startsWith("Usage: ...\n").contains("lakehouse");
    }

    @Test
    void badInputIsRefusedInOneLineThatSaysWhatIsKnown() {
        assertThatThrownBy(() -> parse("--frm", "x")).isInstanceOf(RequestRefusedException.class)
                .hasMessage("argument '--frm' is neither an option (register, status, --dry-run, --replace, --days, --out, --pipeline, --help) "
                        + "nor a key=value setting")
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
        assertThatThrownBy(() -> parse("--out")).isInstanceOf(RequestRefusedException.class).hasMessage("--out needs a value");
        assertThatThrownBy(() -> parse("--dry-run=yes")).isInstanceOf(RequestRefusedException.class).hasMessageContaining("'--dry-run=yes'");
        assertThatThrownBy(() -> parse("status", "register")).isInstanceOf(RequestRefusedException.class)
                .hasMessage("give one of register, status, not 'status' and 'register'");
        assertThatThrownBy(() -> parse("drop")).isInstanceOf(RequestRefusedException.class).hasMessageContaining("'drop' is neither");
        assertThatThrownBy(() -> parse("no.such.key=1")).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no.such.key");
    }
}
