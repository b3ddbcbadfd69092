// Drives Apache Kafka Connect's own JsonConverter for tests/integration/test_json_interop.py.
//
// Mode "values": each stdin line is the base64 of a UTF-8 text; the program prints
//   <schema description>\t<value description>\t<base64 of Values.convertToString(value)>
// of Values.parseString(text) (what SimpleHeaderConverter reads a header as), or
// "ERROR\t<exception class>: <message>".
//
// Mode "read": each stdin line is "<configs>\t<base64 bytes, or - for null>", where <configs>
// is "key=value" pairs joined by "," (or "-" for none), each value URL-encoded (UTF-8). For each
// line the program configures a fresh JsonConverter (as a value converter), reads the bytes with
// toConnectData, and prints
//   <schema description>\t<value description>\t<base64 of fromConnectData(schema, value) or ->
// (the last column "!<exception class>: <message>" when Kafka cannot write back what it read),
// or "ERROR\t<exception class>: <message>" when Kafka refuses to read (or to be configured:
// "CONFIGURE\t<exception class>: <message>"). The descriptions are the
// canonical text that the Python test computes for its own data (describe_schema and
// describe_value there): the same data gives the same text.
import java.math.BigDecimal;
import java.net.URLDecoder;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.data.Values;
import org.apache.kafka.connect.json.JsonConverter;

public class JsonInterop {

    public static void main(String[] args) throws Exception {
        if (args.length != 1 || !(args[0].equals("read") || args[0].equals("values"))) {
            System.err.println("usage: JsonInterop read|values < lines");
            System.exit(2);
        }
        boolean values = args[0].equals("values");
        java.io.BufferedReader in = new java.io.BufferedReader(
            new java.io.InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty() && !values) continue;
            out.append(values ? parseLine(line) : readLine(line)).append('\n');
        }
        System.out.print(out);
        System.out.flush();
    }

    private static String readLine(String line) {
        String[] parts = line.split("\t", -1);
        Map<String, String> configs = new HashMap<>();
        if (!parts[0].equals("-")) {
            for (String pair : parts[0].split(",")) {
                int eq = pair.indexOf('=');
                configs.put(pair.substring(0, eq),
                    URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
            }
        }
        byte[] bytes = parts[1].equals("-") ? null : Base64.getDecoder().decode(parts[1]);
        JsonConverter converter = new JsonConverter();
        try {
            converter.configure(configs, false);
        } catch (RuntimeException e) {
            converter.close();
            return "CONFIGURE\t" + e.getClass().getSimpleName() + ": " + e.getMessage();
        }
        SchemaAndValue read;
        try {
            read = converter.toConnectData("topic", bytes);
        } catch (RuntimeException e) {
            converter.close();
            return "ERROR\t" + e.getClass().getSimpleName() + ": " + e.getMessage();
        }
        String description = describeSchema(read.schema()) + "\t" + describeValue(read.value());
        try {
            byte[] written = converter.fromConnectData("topic", read.schema(), read.value());
            return description + "\t"
                + (written == null ? "-" : Base64.getEncoder().encodeToString(written));
        } catch (RuntimeException e) {
            // what Kafka read, it cannot write back (e.g. a null in a required field)
            return description + "\t!" + e.getClass().getSimpleName() + ": " + e.getMessage();
        } finally {
            converter.close();
        }
    }

    private static String parseLine(String line) {
        String text = new String(Base64.getDecoder().decode(line), StandardCharsets.UTF_8);
        try {
            SchemaAndValue parsed = Values.parseString(text);
            if (parsed == null) return "null\tnull\t-";
            String back = Values.convertToString(parsed.schema(), parsed.value());
            return describeSchema(parsed.schema()) + "\t" + describeValue(parsed.value()) + "\t"
                + (back == null ? "-" : b64(back));
        } catch (RuntimeException e) {
            return "ERROR\t" + e.getClass().getSimpleName() + ": " + e.getMessage();
        }
    }

    static String text(Object value) {
        return value == null ? "null" : value.toString();
    }

    static String describeSchema(Schema schema) {
        if (schema == null) return "null";
        StringBuilder sb = new StringBuilder("{");
        sb.append(schema.type()).append(schema.isOptional() ? "?" : "");
        sb.append("|name=").append(text(schema.name()));
        sb.append("|version=").append(text(schema.version()));
        sb.append("|doc=").append(schema.doc() == null ? "null" : b64(schema.doc()));
        sb.append("|params=");
        if (schema.parameters() == null) {
            sb.append("null");
        } else {
            List<String> params = new ArrayList<>();
            for (Map.Entry<String, String> e : new TreeMap<>(schema.parameters()).entrySet()) {
                params.add(e.getKey() + "=" + e.getValue());
            }
            sb.append(String.join(";", params));
        }
        sb.append("|default=").append(describeValue(schema.defaultValue()));
        switch (schema.type()) {
            case ARRAY:
                sb.append("|items=").append(describeSchema(schema.valueSchema()));
                break;
            case MAP:
                sb.append("|keys=").append(describeSchema(schema.keySchema()));
                sb.append("|values=").append(describeSchema(schema.valueSchema()));
                break;
            case STRUCT:
                List<String> fields = new ArrayList<>();
                for (Field field : schema.fields()) {
                    fields.add(field.name() + ":" + describeSchema(field.schema()));
                }
                sb.append("|fields=[").append(String.join(",", fields)).append("]");
                break;
            default:
                break;
        }
        return sb.append("}").toString();
    }

    static String b64(String text) {
        return Base64.getEncoder().encodeToString(text.getBytes(StandardCharsets.UTF_8));
    }

    static String describeValue(Object value) {
        if (value == null) return "null";
        if (value instanceof Byte) return "i8:" + value;
        if (value instanceof Short) return "i16:" + value;
        if (value instanceof Integer) return "i32:" + value;
        if (value instanceof Long) return "i64:" + value;
        if (value instanceof Float) {
            return String.format("f32:%08x", Float.floatToIntBits((Float) value));
        }
        if (value instanceof Double) {
            return String.format("f64:%016x", Double.doubleToLongBits((Double) value));
        }
        if (value instanceof Boolean) return "bool:" + value;
        if (value instanceof String) return "str:" + b64((String) value);
        if (value instanceof byte[]) return "bytes:" + Base64.getEncoder().encodeToString((byte[]) value);
        if (value instanceof ByteBuffer) {
            ByteBuffer buffer = ((ByteBuffer) value).duplicate();
            byte[] bytes = new byte[buffer.remaining()];
            buffer.get(bytes);
            return "bytes:" + Base64.getEncoder().encodeToString(bytes);
        }
        if (value instanceof BigDecimal) {
            BigDecimal decimal = (BigDecimal) value;
            return "dec:" + decimal.unscaledValue() + "e" + decimal.scale();
        }
        if (value instanceof java.util.Date) return "ms:" + ((java.util.Date) value).getTime();
        if (value instanceof List) {
            List<String> items = new ArrayList<>();
            for (Object item : (List<?>) value) items.add(describeValue(item));
            return "[" + String.join(",", items) + "]";
        }
        if (value instanceof Map) {
            List<String> entries = new ArrayList<>();
            for (Map.Entry<?, ?> e : ((Map<?, ?>) value).entrySet()) {
                entries.add(describeValue(e.getKey()) + "=" + describeValue(e.getValue()));
            }
            Collections.sort(entries);
            return "{" + String.join(",", entries) + "}";
        }
        if (value instanceof Struct) {
            Struct struct = (Struct) value;
            List<String> fields = new ArrayList<>();
            for (Field field : struct.schema().fields()) {
                fields.add(field.name() + "=" + describeValue(struct.getWithoutDefault(field.name())));
            }
            return "Struct{" + String.join(",", fields) + "}";
        }
        return "unknown:" + value.getClass().getName();
    }
}
