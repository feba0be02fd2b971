import sys

import gpugraph

ctx = gpugraph.SessionContext()  # the GPU engine; SessionContext("cpu"): DataFusion's CPU plan
ctx.register_parquet("lineitem", sys.argv[1])
ctx.sql("CREATE VIEW shipped AS SELECT * FROM lineitem WHERE l_shipdate <= DATE '1998-09-02'")
df = ctx.sql("""SELECT l_returnflag, l_linestatus, count(*) AS n, sum(l_quantity) AS qty
                FROM shipped GROUP BY l_returnflag, l_linestatus ORDER BY 1, 2""")
print(df.to_pandas())
df.explain()  # which operators run on the GPU, and why any did not

# In-memory tables stay on the GPU across the session's queries:
ctx.from_arrow(df.to_arrow_table(), "summary")
print(ctx.sql("SELECT sum(n) AS shipped_rows FROM summary").to_pylist())
