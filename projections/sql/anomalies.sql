-- Every rule and integrity anomaly, with its severity and rule.
CREATE OR REPLACE VIEW anomalies AS
SELECT f.code, c.severity, f.table_id, f.shoe_id, f.round_no, f.seqs, f.explanation, c.rule,
       f.occurred_at
FROM (SELECT * FROM anomalies_found_rounds
      UNION ALL SELECT * FROM anomalies_found_money
      UNION ALL SELECT * FROM anomalies_found_shoes
      UNION ALL SELECT * FROM anomalies_found_tables
      UNION ALL SELECT * FROM anomalies_found_streams
      UNION ALL SELECT * FROM anomalies_found_places) AS f
JOIN anomaly_codes AS c USING (code);
