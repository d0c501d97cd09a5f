//! ORDER_LINE as an ndpdb table: its name, its columns with their types
//! (TPC-C clause 1.3, in [`ndpdb_format::schema`]'s types) and a tuple's
//! values in column order. The loaders, the benchmarks and `ndpdb db` all
//! create the table from here, so they agree on its layout.

use ndpdb_format::schema::{Column, ColumnType, Value};

use crate::OrderLine;

/// The table's name.
pub const ORDER_LINE: &str = "order_line";
/// The column update steps change and the experiments sum.
pub const OL_AMOUNT: &str = "ol_amount";
/// The item of a line, random in 1..=100,000 on every line: the experiments'
/// agreement checks also sum it, since `ol_amount` is 0 on delivered lines.
pub const OL_I_ID: &str = "ol_i_id";

/// ORDER_LINE's columns, in the order of [`OrderLine::values`].
pub fn order_line_columns() -> Vec<Column> {
    vec![
        Column::new("ol_o_id", ColumnType::Int32, false),
        Column::new("ol_d_id", ColumnType::Int32, false),
        Column::new("ol_w_id", ColumnType::Int32, false),
        Column::new("ol_number", ColumnType::Int32, false),
        Column::new(OL_I_ID, ColumnType::Int32, false),
        Column::new("ol_supply_w_id", ColumnType::Int32, false),
        Column::new("ol_delivery_d", ColumnType::Timestamp, true),
        Column::new("ol_quantity", ColumnType::Int32, false),
        Column::new(OL_AMOUNT, ColumnType::Decimal { precision: 6, scale: 2 }, false),
        Column::new("ol_dist_info", ColumnType::Text(24), false),
    ]
}

impl OrderLine {
    /// The tuple's values in the order of [`order_line_columns`].
    pub fn values(&self) -> Vec<Value> {
        vec![
            Value::Int(self.ol_o_id.into()),
            Value::Int(self.ol_d_id.into()),
            Value::Int(self.ol_w_id.into()),
            Value::Int(self.ol_number.into()),
            Value::Int(self.ol_i_id.into()),
            Value::Int(self.ol_supply_w_id.into()),
            self.ol_delivery_d.map_or(Value::Null, Value::Int),
            Value::Int(self.ol_quantity.into()),
            Value::Int(self.ol_amount),
            Value::Text(self.ol_dist_info.to_vec()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OrderLineGen;
    use ndpdb_format::schema::Layout;

    /// Every generated tuple encodes under the table's layout: the values
    /// match the columns in number, order, type and nullability.
    #[test]
    fn generated_tuples_fit_the_columns() {
        let columns = order_line_columns();
        let layout = Layout::new(&columns).unwrap();
        // Orders 2,101 and up (about 21,000 lines in) have NULL delivery dates.
        for o in OrderLineGen::new(7, 1_700_000_000_000_000).take_rows(25_000) {
            let values = o.values();
            assert_eq!(layout.decode(&layout.encode(&values).unwrap()).unwrap(), values);
        }
        assert_eq!(columns.iter().filter(|c| c.name == OL_AMOUNT).count(), 1);
    }
}
